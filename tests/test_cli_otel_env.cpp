// tests/test_cli_otel_env.cpp: the OpenTelemetry environment: which variable wins, what the
// command line overrides, and that a malformed one is a usage error of one line.
#include <doctest/doctest.h>

#include <map>

#include "cli/options.h"
#include "cli/otel_env.h"
#include "tests/support.h"

namespace {

// A made-up environment.
Environment environment(std::map<std::string, std::string> variables)
{
	return [variables = std::move(variables)](const char *name) -> const char * {
		auto it = variables.find(name);
		return it == variables.end() ? nullptr : it->second.c_str();
	};
}

// Options as parsed with --push-format otlp and no URL, then the environment applied.
Result<Options> with_env(std::map<std::string, std::string> variables, Options options = {})
{
	if (options.push_url.empty() && options.format != ReportFormat::Otlp)
		options.push_format = PushFormat::Otlp;
	const Environment env = environment(std::move(variables));
	if (Status endpoint = apply_otel_endpoint(options, env); !endpoint.ok())
		return Error(endpoint.error());
	if (Status rest = apply_otel_environment(options, env); !rest.ok())
		return Error(rest.error());
	return options;
}

std::string env_error(std::map<std::string, std::string> variables)
{
	Result<Options> r = with_env(std::move(variables));
	REQUIRE(!r.ok());
	CHECK(r.error().find('\n') == std::string::npos);
	return r.error();
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("OTEL_*: the profiles endpoint as given, else the general one with /v1development/profiles; a URL given wins")
{
	CHECK(with_env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"}})->push_url ==
	      "http://collector:4318/v1development/profiles");
	CHECK(with_env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://gw/otlp"},
			{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://gw/custom/profiles"}})
		      ->push_url == "https://gw/custom/profiles");
	Options given;
	given.push_url = "http://mine:4318";
	given.push_format = PushFormat::Otlp;
	CHECK(with_env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"}}, given)->push_url == "http://mine:4318");
	// Nothing set: no URL, and the command line's check says what to give.
	CHECK(with_env({})->push_url.empty());
}

TEST_CASE("OTEL_*: headers, the profiles' first; a header the command line or auth file names wins")
{
	const Options o = *with_env({{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=general"},
				     {"OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
				      "Authorization=Bearer%20tok, X-Scope-OrgID = tenant-1 ,,"}});
	CHECK(o.otel_headers == std::vector<std::string>{"Authorization: Bearer tok", "X-Scope-OrgID: tenant-1"});
	std::vector<std::string> headers{"x-scope-orgid: from-flag"};
	add_otel_headers(headers, o.otel_headers);
	CHECK(headers == std::vector<std::string>{"x-scope-orgid: from-flag", "Authorization: Bearer tok"});
}

TEST_CASE("OTEL_*: the service name: --app, else OTEL_SERVICE_NAME, else the resource's service.name; "
	  "the resource attributes")
{
	Options o = *with_env({{"OTEL_SERVICE_NAME", "checkout"},
			       {"OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored,deployment.environment.name=prod%2Ceu"}});
	CHECK(o.report.service_name == "checkout");
	CHECK(o.report.resource_attributes ==
	      std::vector<std::pair<std::string, std::string>>{{"service.name", "ignored"},
							       {"deployment.environment.name", "prod,eu"}});
	CHECK(with_env({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=cart"}})->report.service_name == "cart");
	Options app;
	app.app = "from-flag";
	CHECK(with_env({{"OTEL_SERVICE_NAME", "checkout"}}, app)->report.service_name == "from-flag");
	// -o FILE.otlp reads the service and resource too, but no push's headers.
	Options file;
	file.format = ReportFormat::Otlp;
	o = *with_env({{"OTEL_SERVICE_NAME", "batch"}, {"OTEL_EXPORTER_OTLP_HEADERS", "a=b"}}, file);
	CHECK(o.report.service_name == "batch");
	CHECK(o.otel_headers.empty());
	// A run that speaks no OTLP reads none of them, malformed or not.
	Options pprof;
	pprof.format = ReportFormat::Pprof;
	pprof.push_url = "http://pyro:4040/ingest";
	CHECK(apply_otel_environment(pprof, environment({{"OTEL_EXPORTER_OTLP_HEADERS", "broken"}})).ok());
}

TEST_CASE("OTEL_*: a malformed variable is one line naming it, never quoting a header's value")
{
	CHECK(env_error({{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"}}) ==
	      "OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' is not an http:// or https:// URL");
	CHECK(env_error({{"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "http:///v1development/profiles"}}) ==
	      "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: 'http:///v1development/profiles' names no host");
	const std::string no_equals = env_error({{"OTEL_EXPORTER_OTLP_HEADERS", "a=b,Bearer secret-token"}});
	CHECK(no_equals == "OTEL_EXPORTER_OTLP_HEADERS: entry 2 has no '=': expected KEY=VALUE, separated by commas");
	CHECK(env_error({{"OTEL_EXPORTER_OTLP_HEADERS", "=x"}}).find("has no key") != std::string::npos);
	CHECK(env_error({{"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%2"}}) ==
	      "OTEL_EXPORTER_OTLP_HEADERS: entry 1 (Authorization) has a broken %-escape in its value");
	CHECK(env_error({{"OTEL_EXPORTER_OTLP_HEADERS", "bad name=x"}}).starts_with("OTEL_EXPORTER_OTLP_HEADERS: expected"));
	CHECK(env_error({{"OTEL_EXPORTER_OTLP_HEADERS", "Content-Type=text/plain"}}) ==
	      "OTEL_EXPORTER_OTLP_HEADERS: profile sets Content-Type itself");
	CHECK(env_error({{"OTEL_RESOURCE_ATTRIBUTES", "team"}}) ==
	      "OTEL_RESOURCE_ATTRIBUTES: entry 1 has no '=': expected KEY=VALUE, separated by commas");
	CHECK(env_error({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}}) ==
	      "OTEL_EXPORTER_OTLP_PROTOCOL is 'grpc': profile sends OTLP over HTTP with protobuf only; set it to "
	      "http/protobuf (or unset it)");
	CHECK(with_env({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}}).ok());
}

TEST_CASE("OTEL_*: parse_options reads the environment: --push-format otlp alone pushes where it says")
{
	ScopedEnv endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
	ScopedEnv service("OTEL_SERVICE_NAME", "api");
	std::vector<std::string> args{"profile", "--interval", "5", "--push-format", "otlp"};
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(a.data());
	Result<Options> o = parse_options(int(argv.size()), argv.data());
	REQUIRE_MESSAGE(o.ok(), o.error());
	CHECK(o->push_url == "http://collector:4318/v1development/profiles");
	CHECK(o->report.service_name == "api");
	ScopedEnv broken("OTEL_EXPORTER_OTLP_ENDPOINT", "collector");
	o = parse_options(int(argv.size()), argv.data());
	REQUIRE(!o.ok());
	CHECK(o.error() == "OTEL_EXPORTER_OTLP_ENDPOINT: 'collector' is not an http:// or https:// URL");
}

} // TEST_SUITE
