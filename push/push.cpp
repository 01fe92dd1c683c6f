// push/push.cpp: the servers' ingestion APIs, one row each in push_backends(): where a
// window goes, the request that carries it, and what the answer means.
//
// Sources (read 2024-2025, the servers' own code where the documentation is silent):
// Grafana Pyroscope, POST /ingest
//   https://grafana.com/docs/pyroscope/latest/configure-server/about-server-api/
//   (grafana/pyroscope docs/sources/configure-server/about-server-api.md): one endpoint,
//   POST /ingest, metadata in the query: name (required, "app{k=v,...}"), from and until
//   (required, Unix time), format (default folded; "pprof" here), sampleRate (Hz, default
//   100), spyName, units (default samples), aggregationType (default sum; the table spells it
//   "aggregrationType", the handler reads "aggregationType"). With format=pprof, units,
//   aggregationType and sampleRate are ignored (the pprof's own sample types rule).
//   Multi-tenant servers take the tenant in an X-Scope-OrgID header (set by a proxy).
//   https://github.com/grafana/pyroscope/blob/main/pkg/ingester/pyroscope/ingest_handler.go:
//   with format=pprof the raw request body is the profile, whatever its Content-Type (a
//   multipart form with a `profile` field is read only when format is not given, see
//   examples/api/ingest_pprof.py); 400 for bad metadata, 413 for too large a body, 422 when
//   ingestion fails, other errors through their connect code (429 when rate-limited).
//   pkg/pprof/pprof.go RawFromBytes: the body may be gzipped or not (gzip is sniffed).
//   pkg/og/convert/pprof/profile.go createLabels: the series gets service_name = the app
//   name before '{', __name__ = process_cpu for a "cpu" sample type, pyroscope_spy =
//   spyName, and the labels inside the braces (but those starting "__"); so service_name
//   is not repeated inside the braces here.
// Parca, ProfileStoreService.WriteRaw
//   https://github.com/parca-dev/parca/blob/main/proto/parca/profilestore/v1alpha1/profilestore.proto:
//   package parca.profilestore.v1alpha1; WriteRawRequest { string tenant = 1 (deprecated);
//   repeated RawProfileSeries series = 2; bool normalized = 3 } where RawProfileSeries {
//   LabelSet labels = 1; repeated RawSample samples = 2 }, LabelSet { repeated Label labels
//   = 1 }, Label { string name = 1; string value = 2 }, RawSample { bytes raw_profile = 1 }.
//   https://github.com/parca-dev/parca/blob/main/pkg/server/server.go: one HTTP/1.1 + h2c
//   port (7070) serves native gRPC (HTTP/2), gRPC-web (improbable-eng/grpc-web, any
//   request whose Content-Type begins "application/grpc-web", WithAllowNonRootResource so
//   a path prefix is fine), and the grpc-gateway JSON routes (mounted under /api since
//   2023, at the root before: POST /api/profiles/writeraw). No Connect protocol.
//   https://www.parca.dev/docs/parca: "The React based Parca web UI uses gRPC-web".
//   gRPC-web is used here: the same path in every Parca version, the protobuf message
//   itself, and an unambiguous grpc-status (a JSON POST to a route an older server lacks
//   falls through to the UI and may come back 200). The request: POST
//   /parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw, Content-Type
//   application/grpc-web+proto, body one frame: a flags byte (0, uncompressed), a 4-byte
//   big-endian length, the WriteRawRequest (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-WEB.md).
//   The answer is HTTP 200 whatever happened; grpc-status comes as a header when nothing
//   else does, else in a trailer frame (flags 0x80) of "key:value\r\n" lines at the end of
//   the body (grpc-web/go/grpcweb/grpc_web_response.go finishRequest).
//   pkg/normalizer (NormalizeWriteRawRequest): raw_profile is gzipped pprof; the series'
//   __name__ label names the profile type (missing: InvalidArgument); other label names
//   must be valid Prometheus names, none twice. Ingestion errors are Internal.
//   The agent's __name__ for CPU: "parca_agent_cpu" (parca-dev/parca-agent
//   docs/labelling.md, pkg/profiler/cpu Name()); Parca's UI names
//   parca_agent_cpu:samples:count:cpu:nanoseconds:delta "CPU Samples". Off the CPU, the
//   agent (on the OpenTelemetry profiler) sends __name__ "parca_agent" with sample type
//   wallclock/nanoseconds and period samples/count: the UI's "Off-CPU",
//   parca_agent:wallclock:nanoseconds:samples:count:delta.
//   Pyroscope, off the CPU (pkg/og/convert/pprof/profile.go metricName, 2025): __name__ is
//   process_cpu for any sample type whose name holds "cpu", so off_cpu/nanoseconds lands
//   as process_cpu:off_cpu:nanoseconds:samples:count, a type of its own beside CPU's
//   process_cpu:cpu:nanoseconds:cpu:nanoseconds.
//   normalized = false: the addresses in profile's pprof are the processes' own, with
//   their mappings, and Parca is to normalize them (true means already file offsets).
//   gRPC status -> HTTP status, to judge both servers alike: grpc-gateway's
//   runtime.HTTPStatusFromCode (runtime/errors.go).
// OTLP/HTTP, profiles
//   https://opentelemetry.io/docs/specs/otlp/ (OTLP/HTTP): a POST of the binary protobuf
//   ExportProfilesServiceRequest (Content-Type application/x-protobuf; Content-Encoding gzip
//   allowed) to /v1development/profiles on port 4318 by default, while the signal is alpha
//   (opentelemetry-proto's collector/profiles/v1development/profiles_service.proto). Success
//   is 200 with an ExportProfilesServiceResponse whose partial_success, when set, says how
//   many profiles were rejected and why; failure is a 4xx or 5xx whose body may be a
//   google.rpc.Status (message = 2). 429, 502, 503 and 504 are to be retried, with
//   Retry-After when given. The endpoint variables (OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT)
//   name a whole URL, any path: a URL's own path is kept, only a bare one gets the default.
#include "push/push.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

#include "push/curl_url.h"
#include "report/gzip.h"
#include "report/protobuf.h"

namespace {

constexpr std::string_view pyroscope_path = "/ingest";
constexpr std::string_view parca_path = "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw";
constexpr std::string_view parca_gateway_path = "/profiles/writeraw";
constexpr std::string_view otlp_path = "/v1development/profiles";
constexpr std::string_view parca_profile_name = "parca_agent_cpu";
constexpr std::string_view parca_off_cpu_name = "parca_agent";
// Pyroscope's name for an eBPF profiler of native code (its former ebpfspy agent).
constexpr std::string_view pyroscope_spy_name = "ebpfspy";

// Characters Pyroscope's name syntax gives a meaning (and spaces and control characters),
// as --app refuses them, replaced by '_': a host name should hold none anyway.
std::string label_value(std::string value)
{
	for (char &c : value)
		if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f ||
		    std::strchr("{}=,\"\\", c))
			c = '_';
	return value;
}

// RFC 3986 percent-encoding of a query value: unreserved characters stay.
std::string query_value(std::string_view text)
{
	static const char hex[] = "0123456789ABCDEF";
	std::string out;
	for (unsigned char c : text) {
		if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
			out += char(c);
		} else {
			out += '%';
			out += hex[c >> 4];
			out += hex[c & 15];
		}
	}
	return out;
}

std::string parca_body(const PushConfig &config, const PushWindow &window)
{
	// Field numbers from profilestore.proto (see the top of this file).
	ProtoMessage labels, label, series, sample, request;
	const std::string_view profile_name = config.off_cpu ? parca_off_cpu_name : parca_profile_name;
	for (auto [name, value] : {std::pair<std::string_view, std::string_view>{"__name__", profile_name},
				   {"hostname", config.host},
				   {"service_name", config.app}}) {
		label.clear();
		label.add_bytes(1, name);  // Label.name
		label.add_bytes(2, value); // Label.value
		labels.add_message(1, label); // LabelSet.labels
	}
	series.add_message(1, labels);             // RawProfileSeries.labels
	sample.add_bytes(1, window.profile.bytes);  // RawSample.raw_profile
	series.add_message(2, sample);             // RawProfileSeries.samples
	request.add_message(2, series);            // WriteRawRequest.series
	request.add_bool(3, false);                // WriteRawRequest.normalized (left out: false)

	const std::string &message = request.data();
	std::string frame(5, '\0'); // flags 0: not compressed
	for (int i = 0; i < 4; i++)
		frame[1 + i] = char(message.size() >> (24 - 8 * i));
	return frame + message;
}

uint64_t sample_rate(const PushConfig &config)
{
	if (config.off_cpu)
		return 0;
	if (config.frequency)
		return config.frequency;
	if (config.period_ns)
		return std::max<uint64_t>(1, std::llround(1e9 / double(config.period_ns)));
	return 0;
}

// grpc-gateway's runtime.HTTPStatusFromCode.
long http_status_of_grpc(long code)
{
	switch (code) {
	case 0: return 200;   // OK
	case 1: return 499;   // CANCELLED
	case 3: return 400;   // INVALID_ARGUMENT
	case 4: return 504;   // DEADLINE_EXCEEDED
	case 5: return 404;   // NOT_FOUND
	case 6: return 409;   // ALREADY_EXISTS
	case 7: return 403;   // PERMISSION_DENIED
	case 8: return 429;   // RESOURCE_EXHAUSTED
	case 9: return 400;   // FAILED_PRECONDITION
	case 10: return 409;  // ABORTED
	case 11: return 400;  // OUT_OF_RANGE
	case 12: return 501;  // UNIMPLEMENTED
	case 14: return 503;  // UNAVAILABLE
	case 16: return 401;  // UNAUTHENTICATED
	default: return 500;  // UNKNOWN, INTERNAL, DATA_LOSS, and any other
	}
}

// The trailer frame of a gRPC-web body: its grpc-status and grpc-message, if it has one.
bool grpc_web_trailer(std::string_view body, std::string &status, std::string &message)
{
	size_t at = 0;
	while (body.size() - at >= 5) {
		const auto flags = static_cast<unsigned char>(body[at]);
		uint32_t length = 0;
		for (int i = 1; i <= 4; i++)
			length = length << 8 | static_cast<unsigned char>(body[at + i]);
		at += 5;
		if (length > body.size() - at)
			return false;
		if (flags & 0x80) {
			std::string_view trailer = body.substr(at, length);
			bool found = false;
			while (!trailer.empty()) {
				size_t end = trailer.find("\r\n");
				std::string_view line = trailer.substr(0, end);
				trailer.remove_prefix(end == std::string_view::npos ? trailer.size() : end + 2);
				const auto field = answer_field(line);
				if (!field)
					continue;
				const auto &[key, value] = *field;
				if (key == "grpc-status") {
					status = value;
					found = true;
				} else if (key == "grpc-message") {
					message = value;
				}
			}
			return found;
		}
		at += length;
	}
	return false;
}

// The first line of an answer's body, short enough for one line of stderr.
std::string first_line(std::string_view body)
{
	std::string_view line = body.substr(0, body.find_first_of("\r\n"));
	std::string out;
	for (char c : line.substr(0, 200))
		out += static_cast<unsigned char>(c) < ' ' ? ' ' : c;
	if (line.size() > 200)
		out += "...";
	return out;
}

bool retry_status(long status)
{
	return status >= 500 || status == 429 || status == 408;
}

// The verdict on an HTTP status, with reason saying what came back.
PushVerdict judge_status(long status, const std::string &reason, const PushResponse &response)
{
	if (status == 401 || status == 403)
		return {PushOutcome::Halt, "the server refused the credentials (" + reason +
						   "): check --push-auth-file, then restart profile"};
	PushVerdict verdict{retry_status(status) ? PushOutcome::Retry : PushOutcome::Refused, reason};
	if (verdict.outcome == PushOutcome::Retry && !response.retry_after.empty())
		if (std::optional<double> wait = parse_retry_after(response.retry_after, time(nullptr)))
			verdict.retry_after_s = *wait;
	return verdict;
}

// An answer whose HTTP status says it all, with its body's first line when it failed.
PushVerdict judge_http(const PushResponse &response)
{
	if (response.status >= 200 && response.status < 300)
		return {PushOutcome::Delivered, ""};
	std::string reason = "HTTP " + std::to_string(response.status);
	if (std::string line = first_line(response.body); !line.empty())
		reason += ": " + line;
	return judge_status(response.status, reason, response);
}

// gRPC-web answers 200 whatever happened: its grpc-status says, judged as its HTTP status.
PushVerdict parca_judge(const PushResponse &response)
{
	if (response.status != 200)
		return judge_http(response);
	std::string grpc_status = response.grpc_status, grpc_message = response.grpc_message;
	if (grpc_status.empty() && !grpc_web_trailer(response.body, grpc_status, grpc_message))
		return {PushOutcome::Refused, "HTTP 200 without a grpc-status: not Parca's gRPC-web API?"};
	if (grpc_status == "0")
		return {PushOutcome::Delivered, ""};
	char *end = nullptr;
	const long code = std::strtol(grpc_status.c_str(), &end, 10);
	std::string reason = "gRPC status " + grpc_status;
	if (!grpc_message.empty())
		reason += ": " + first_line(grpc_message);
	return judge_status(http_status_of_grpc(*end ? 2 : code), reason, response);
}

void pyroscope_encode(PushRequest &request, const PushConfig &config, const PushWindow &window)
{
	auto seconds = [](int64_t ns) { return std::to_string(ns / 1000000000); };
	request.url = config.url;
	request.url += "?name=" + query_value(config.app + "{hostname=" + config.host + "}");
	request.url += "&from=" + seconds(window.start_ns);
	request.url += "&until=" + seconds(window.end_ns);
	request.url += "&format=pprof";
	if (uint64_t rate = sample_rate(config))
		request.url += "&sampleRate=" + std::to_string(rate);
	request.url += "&spyName=" + std::string(pyroscope_spy_name);
	request.url += "&units=samples&aggregationType=sum";
	request.headers = {"Content-Type: application/octet-stream"};
	request.body = window.profile.bytes;
}

void parca_encode(PushRequest &request, const PushConfig &config, const PushWindow &window)
{
	request.url = config.url;
	request.headers = {"Content-Type: application/grpc-web+proto", "X-Grpc-Web: 1"};
	request.body = parca_body(config, window);
}

void otlp_encode(PushRequest &request, const PushConfig &config, const PushWindow &window)
{
	request.url = config.url;
	request.headers = {"Content-Type: application/x-protobuf", "Content-Encoding: gzip"};
	request.body = gzipped(window.profile.bytes);
}

// What an OTLP answer's protobuf body says: a google.rpc.Status's message (field 2) when it
// failed, an ExportProfilesPartialSuccess (field 1 of the response: rejected_profiles = 1,
// error_message = 2) when it did not. Field numbers of opentelemetry-proto v1.10 and v1.11.
std::string otlp_partial_success(std::string_view body)
{
	uint32_t field = 0;
	uint64_t number = 0;
	std::string_view bytes;
	std::string_view partial;
	for (ProtoReader response(body); response.next(field, number, bytes);)
		if (field == 1)
			partial = bytes;
	int64_t rejected = 0;
	std::string message;
	for (ProtoReader fields(partial); fields.next(field, number, bytes);) {
		if (field == 1)
			rejected = int64_t(number);
		else if (field == 2)
			message = first_line(bytes);
	}
	if (rejected == 0 && message.empty())
		return "";
	std::string said = std::to_string(rejected) + (rejected == 1 ? " profile" : " profiles") + " rejected";
	return message.empty() ? said : said + ": " + message;
}

PushVerdict otlp_judge(const PushResponse &response)
{
	if (response.status >= 200 && response.status < 300)
		return {PushOutcome::Delivered, otlp_partial_success(response.body)};
	uint32_t field = 0;
	uint64_t number = 0;
	std::string_view bytes;
	ProtoReader status(response.body);
	std::string message;
	while (status.next(field, number, bytes))
		if (field == 2)
			message = first_line(bytes);
	if (status.bad() || message.empty())
		return judge_http(response);
	return judge_status(response.status, "HTTP " + std::to_string(response.status) + ": " + message, response);
}

bool otlp_recognises(std::string_view path)
{
	return path.ends_with(otlp_path);
}

bool pyroscope_recognises(std::string_view path)
{
	return path.ends_with(pyroscope_path);
}

bool parca_recognises(std::string_view path)
{
	return path.ends_with("/WriteRaw") || path.ends_with(parca_gateway_path);
}

// Parca's paths that profile cannot take: its JSON gateway, another service's WriteRaw.
Status parca_check_path(const std::string &url, std::string_view path)
{
	if (path.ends_with(parca_gateway_path))
		return Error("--push: '" + url + "' is Parca's JSON gateway; profile speaks Parca's "
			     "gRPC-web API: give the server's URL (http://HOST:7070) or end it with " +
			     std::string(parca_path));
	if (path.ends_with("/WriteRaw") && !path.ends_with(parca_path))
		return Error("--push: '" + url + "' names another service's WriteRaw: Parca's is " +
			     std::string(parca_path));
	return {};
}

// The backend whose paths path ends with; nullptr when none.
const PushBackend *backend_of_path(std::string_view path)
{
	for (const PushBackend &backend : push_backends())
		if (backend.recognises(path))
			return &backend;
	return nullptr;
}

// "a Pyroscope or a Parca server: add --push-format pyroscope|parca, or end the URL with
// /ingest (Pyroscope) or ... (Parca)": the end of the error for a URL no backend claims.
std::string unknown_backend_help()
{
	const std::span<const PushBackend> backends = push_backends();
	std::string titles, names, paths;
	for (size_t i = 0; i < backends.size(); i++) {
		const std::string_view between = i == 0 ? "" : i + 1 == backends.size() ? " or " : ", ";
		const bool vowel = std::strchr("AEIOU", backends[i].title.front());
		titles += std::string(between) + (vowel ? "an " : "a ") + std::string(backends[i].title);
		names += std::string(i == 0 ? "" : "|") + backends[i].name;
		paths += std::string(between) + std::string(backends[i].path) + " (" + std::string(backends[i].title) + ")";
	}
	return titles + " server: add --push-format " + names + ", or end the URL with " + paths;
}

} // namespace

Status resolve_push_target(PushConfig &config)
{
	CurlUrl url(curl_url());
	if (!url)
		return Error("--push: out of memory");
	if (CURLUcode rc = curl_url_set(url.get(), CURLUPART_URL, config.url.c_str(), 0); rc != CURLUE_OK)
		return Error("--push: cannot read the URL '" + config.url + "': " + curl_url_strerror(rc));
	const std::string scheme = url_part(url.get(), CURLUPART_SCHEME);
	if (scheme != "http" && scheme != "https")
		return Error("--push: '" + config.url + "' is not an http:// or https:// URL");
	if (url_part(url.get(), CURLUPART_HOST).empty())
		return Error("--push: '" + config.url + "' names no host");
	if (!url_part(url.get(), CURLUPART_QUERY).empty() || !url_part(url.get(), CURLUPART_FRAGMENT).empty())
		return Error("--push: '" + config.url + "' has a query or fragment: give the server's URL, "
			     "profile adds what each API needs");

	std::string path = url_part(url.get(), CURLUPART_PATH);
	while (!path.empty() && path.back() == '/')
		path.pop_back();
	if (config.format == PushFormat::Auto) {
		const PushBackend *recognised = backend_of_path(path);
		if (!recognised)
			return Error("--push: cannot tell from '" + config.url + "' whether it is " + unknown_backend_help());
		config.format = recognised->format;
	}
	const PushBackend &backend = *push_backend(config.format);
	if (const PushBackend *other = backend_of_path(path); other && other != &backend)
		return Error("--push: '" + config.url + "' is " + std::string(other->claimed_as) +
			     ", but --push-format says " + backend.name);
	if (backend.check_path)
		if (Status checked = backend.check_path(config.url, path); !checked.ok())
			return checked;
	if (!std::string_view(path).ends_with(backend.path) && (!backend.any_path || path.empty()))
		path += backend.path;
	curl_url_set(url.get(), CURLUPART_PATH, path.c_str(), 0);
	config.url = url_part(url.get(), CURLUPART_URL);

	if (config.host.empty()) {
		char name[256] = {};
		if (gethostname(name, sizeof(name) - 1) != 0 || !name[0])
			return Error("--push: cannot read this machine's host name: give --app");
		config.host = name;
	}
	config.host = label_value(config.host);
	if (config.app.empty())
		config.app = config.host;
	return {};
}

std::string url_for_humans(const std::string &text)
{
	CurlUrl url(curl_url());
	if (!url || curl_url_set(url.get(), CURLUPART_URL, text.c_str(), 0) != CURLUE_OK)
		return text;
	curl_url_set(url.get(), CURLUPART_USER, nullptr, 0);
	curl_url_set(url.get(), CURLUPART_PASSWORD, nullptr, 0);
	std::string out = url_part(url.get(), CURLUPART_URL);
	return out.empty() ? text : out;
}

std::string_view off_cpu_sample_type(PushFormat format)
{
	const PushBackend *backend = push_backend(format);
	return backend ? backend->off_cpu_type : "off_cpu";
}

PushRequest build_push_request(const PushConfig &config, const PushWindow &window)
{
	PushRequest request;
	push_backend(config.format)->encode(request, config, window);
	static const std::string user_agent = "User-Agent: profile/" PROFILE_VERSION;
	request.headers.push_back(user_agent);
	request.headers.insert(request.headers.end(), config.headers.begin(), config.headers.end());
	return request;
}

PushVerdict judge_push_response(PushFormat format, const Result<PushResponse> &answer)
{
	if (!answer.ok())
		return {PushOutcome::Retry, answer.error()};
	const PushResponse &response = *answer;
	if (!response.redirect.ok())
		return {PushOutcome::Halt, "the server redirected the push to " + response.redirect.error()};
	return push_backend(format)->judge(response);
}

std::span<const PushBackend> push_backends()
{
	// Built on first use: the option table, built before main, reads it.
	static const PushBackend backends[] = {
		{PushFormat::Pyroscope, "pyroscope", "Pyroscope", pyroscope_path, false, "Pyroscope's /ingest",
		 pyroscope_recognises, nullptr, ReportFormat::Pprof, "off_cpu", pyroscope_encode, judge_http},
		{PushFormat::Parca, "parca", "Parca", parca_path, false, "a Parca path", parca_recognises,
		 parca_check_path, ReportFormat::Pprof, "wallclock", parca_encode, parca_judge},
		{PushFormat::Otlp, "otlp", "OTLP", otlp_path, true, "OTLP's /v1development/profiles", otlp_recognises,
		 nullptr, ReportFormat::Otlp, "off_cpu", otlp_encode, otlp_judge},
	};
	return backends;
}

const PushBackend *push_backend(PushFormat format)
{
	for (const PushBackend &backend : push_backends())
		if (backend.format == format)
			return &backend;
	return nullptr;
}

const PushBackend *push_backend_named(std::string_view name)
{
	for (const PushBackend &backend : push_backends())
		if (name == backend.name)
			return &backend;
	return nullptr;
}
