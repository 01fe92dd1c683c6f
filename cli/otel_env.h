// cli/otel_env.h: the OpenTelemetry exporter's environment, read as every OTel exporter
// reads it: where OTLP profiles go, the headers they carry, the service's name and the
// resource's attributes. What the command line gives wins over it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/options.h"

// A variable's value, nullptr when unset: getenv, or a test's table.
using Environment = std::function<const char *(const char *)>;

// --push-format otlp without --push: the endpoint OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT
// names, else OTEL_EXPORTER_OTLP_ENDPOINT with /v1development/profiles added. Ok (also when
// neither is set), or what is wrong with the variable (exit 2).
Status apply_otel_endpoint(Options &options, const Environment &env);

// Once the command line is settled, when OTLP is in use (-o FILE.otlp, --format otlp, an
// OTLP --push): the protocol, OTEL_EXPORTER_OTLP_PROFILES_HEADERS (else
// OTEL_EXPORTER_OTLP_HEADERS) into options.otel_headers, the service name (--app, else
// OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES' service.name) and
// OTEL_RESOURCE_ATTRIBUTES into options.report. Ok, or what is wrong with which variable,
// never quoting a value that may be a secret.
Status apply_otel_environment(Options &options, const Environment &env);

// headers with the environment's headers added after them, but those whose name they
// already have: a flag or the auth file wins over the environment.
void add_otel_headers(std::vector<std::string> &headers, const std::vector<std::string> &otel);
