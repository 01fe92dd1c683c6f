// cli/otel_env.cpp: the OpenTelemetry exporter's environment (the OpenTelemetry
// specification's "OpenTelemetry Protocol Exporter" configuration, and its SDK environment
// variables: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
#include "cli/otel_env.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

namespace {

constexpr std::string_view profiles_path = "/v1development/profiles";

std::string_view trim(std::string_view text)
{
	while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
		text.remove_prefix(1);
	while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
		text.remove_suffix(1);
	return text;
}

std::string lower(std::string_view text)
{
	std::string out(text);
	std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
	return out;
}

// The first of names that is set and not empty: its name and value.
std::optional<std::pair<std::string, std::string>> first_set(const Environment &env,
							       std::initializer_list<const char *> names)
{
	for (const char *name : names)
		if (const char *value = env(name); value && *value)
			return std::pair{std::string(name), std::string(value)};
	return std::nullopt;
}

// %XX escapes decoded; nullopt when one is broken.
std::optional<std::string> percent_decoded(std::string_view text)
{
	std::string out;
	for (size_t i = 0; i < text.size(); i++) {
		if (text[i] != '%') {
			out += text[i];
			continue;
		}
		if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
		    !std::isxdigit(static_cast<unsigned char>(text[i + 2])))
			return std::nullopt;
		out += char(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
		i += 2;
	}
	return out;
}

// The W3C Baggage-like list both OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES
// are: "key=value,key=value", values percent-encoded. The pairs, or what is wrong (by the
// entry's number: a value may be a secret).
Result<std::vector<std::pair<std::string, std::string>>> key_values(const std::string &variable,
								    std::string_view text)
{
	std::vector<std::pair<std::string, std::string>> pairs;
	size_t number = 0;
	while (!text.empty()) {
		const size_t comma = text.find(',');
		const std::string_view entry = trim(text.substr(0, comma));
		text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
		number++;
		if (entry.empty())
			continue;
		const std::string where = variable + ": entry " + std::to_string(number);
		const size_t equals = entry.find('=');
		if (equals == std::string_view::npos)
			return Error(where + " has no '=': expected KEY=VALUE, separated by commas");
		const std::string_view key = trim(entry.substr(0, equals));
		if (key.empty())
			return Error(where + " has no key before its '=': expected KEY=VALUE, separated by commas");
		std::optional<std::string> value = percent_decoded(trim(entry.substr(equals + 1)));
		if (!value)
			return Error(where + " (" + std::string(key) + ") has a broken %-escape in its value");
		pairs.emplace_back(key, std::move(*value));
	}
	return pairs;
}

// Whether the URL's path (without query and a trailing '/') is OTLP's profiles endpoint.
bool otlp_url(std::string_view url)
{
	url = url.substr(0, url.find_first_of("?#"));
	while (url.ends_with('/'))
		url.remove_suffix(1);
	return url.ends_with(profiles_path);
}

bool has_control(std::string_view text)
{
	return std::any_of(text.begin(), text.end(), [](unsigned char c) { return c < ' ' || c == 0x7f; });
}

} // namespace

Status apply_otel_endpoint(Options &options, const Environment &env)
{
	if (options.push_format != PushFormat::Otlp || !options.push_url.empty())
		return {};
	auto endpoint = first_set(env, {"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"});
	if (!endpoint)
		return {};
	auto &[variable, url] = *endpoint;
	const size_t scheme = url.find("://");
	// Never a password the URL holds (url_for_humans reads only a URL curl can).
	const std::string shown = url.find('@') == std::string::npos ? url : url_for_humans(url);
	if (scheme == std::string::npos || (lower(url.substr(0, scheme)) != "http" && lower(url.substr(0, scheme)) != "https"))
		return Error(variable + ": '" + shown + "' is not an http:// or https:// URL");
	if (url.size() == scheme + 3 || url[scheme + 3] == '/')
		return Error(variable + ": '" + shown + "' names no host");
	// The signal's own variable is the whole endpoint; the general one is the server's, to
	// which each signal adds its path.
	if (variable == "OTEL_EXPORTER_OTLP_ENDPOINT") {
		while (url.ends_with('/'))
			url.pop_back();
		url += profiles_path;
	}
	options.push_url = url;
	return {};
}

Status apply_otel_environment(Options &options, const Environment &env)
{
	const bool pushed = options.push_format == PushFormat::Otlp ||
			    (options.push_format == PushFormat::Auto && !options.push_url.empty() && otlp_url(options.push_url));
	if (!pushed && options.format != ReportFormat::Otlp)
		return {};
	if (pushed) {
		if (auto protocol = first_set(env, {"OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"});
		    protocol && protocol->second != "http/protobuf")
			return Error(protocol->first + " is '" + protocol->second + "': profile sends OTLP over HTTP with "
				     "protobuf only; set it to http/protobuf (or unset it)");
		if (auto headers = first_set(env, {"OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"})) {
			auto pairs = key_values(headers->first, headers->second);
			if (!pairs.ok())
				return Error(pairs.error());
			for (const auto &[name, value] : *pairs) {
				const std::string header = name + ": " + value;
				if (Status checked = check_push_header(header); !checked.ok())
					return Error(headers->first + ": " + checked.error());
				options.otel_headers.push_back(header);
			}
		}
	}
	std::string service = options.app;
	if (service.empty())
		if (auto name = first_set(env, {"OTEL_SERVICE_NAME"})) {
			if (has_control(name->second))
				return Error("OTEL_SERVICE_NAME holds a control character");
			service = name->second;
		}
	if (auto attributes = first_set(env, {"OTEL_RESOURCE_ATTRIBUTES"})) {
		auto pairs = key_values(attributes->first, attributes->second);
		if (!pairs.ok())
			return Error(pairs.error());
		for (auto &[key, value] : *pairs) {
			if (has_control(key) || has_control(value))
				return Error("OTEL_RESOURCE_ATTRIBUTES: " + key + " holds a control character");
			if (key == "service.name" && service.empty())
				service = value;
			options.report.resource_attributes.emplace_back(std::move(key), std::move(value));
		}
	}
	options.report.service_name = service;
	return {};
}

void add_otel_headers(std::vector<std::string> &headers, const std::vector<std::string> &otel)
{
	auto name = [](const std::string &header) { return lower(header.substr(0, header.find(':'))); };
	const size_t given = headers.size();
	for (const std::string &header : otel)
		if (std::none_of(headers.begin(), headers.begin() + long(given),
				 [&](const std::string &other) { return name(other) == name(header); }))
			headers.push_back(header);
}
