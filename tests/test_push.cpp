// tests/test_push.cpp: push/: the URLs, requests and verdicts of both APIs, the queue and
// backoff rules, the delivery thread against a scripted transport, and then real HTTP
// through libcurl to tests/receiver.py, which judges each request against the API.
#include <doctest/doctest.h>

#include <signal.h>

#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <tuple>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "push/push.h"
#include "report/report.h"
#include "tests/otlp_decoded.h"
#include "tests/proto_wire.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace {

constexpr const char *parca_method = "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw";

// resolve_push_target's result: how it went, and the resolved config.
std::pair<Status, PushConfig> resolved(const std::string &url, PushFormat format = PushFormat::Auto)
{
	PushConfig config;
	config.url = url;
	config.format = format;
	config.host = "test-host";
	config.app = "web";
	Status status = resolve_push_target(config);
	return {status, config};
}

// The headers an auth file gives, checked to be no error; none when it is one.
std::vector<std::string> auth_headers(std::string_view text)
{
	const Result<PushAuth> auth = parse_push_auth(text);
	CHECK_MESSAGE(auth.ok(), auth.error());
	return auth.ok() ? auth->headers : std::vector<std::string>{};
}

// A small profile: two stacks of one process, UTF-8 names only.
Profile small_profile(int64_t start_ns, uint64_t scale = 1)
{
	Profile p;
	p.frequency = 49;
	p.period_ns = 1000000000 / 49;
	p.duration_s = 15;
	p.start_time_ns = start_ns;
	auto frame = [&](FrameKind kind, const char *name, uint64_t address) {
		Frame f;
		f.kind = kind;
		f.name = name;
		f.address = address;
		if (kind == FrameKind::Native) {
			f.module = "/usr/bin/app";
			f.map_start = 0x555555554000;
			f.map_end = 0x555555600000;
			f.module_offset = address - f.map_start;
		}
		p.frames.push_back(f);
		return uint32_t(p.frames.size() - 1);
	};
	const uint32_t syscall = frame(FrameKind::Kernel, "do_syscall_64", 0xffffffff81000220);
	const uint32_t main = frame(FrameKind::Native, "main", 0x555555555100);
	const uint32_t work = frame(FrameKind::Native, "hot_work", 0x555555556200);
	p.samples.push_back({100, "app", {}, {work, main}, 30 * scale});
	p.samples.push_back({100, "app", {syscall}, {main}, 12 * scale});
	return p;
}

std::string small_pprof(int64_t start_ns, uint64_t scale = 1)
{
	std::ostringstream out;
	write_pprof(out, small_profile(start_ns, scale));
	return out.str();
}

int64_t realtime_ns()
{
	timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Window i of a run that began 10 minutes ago, 15 s each.
PushWindow window(int i)
{
	static const int64_t base = realtime_ns() / 1000000000 * 1000000000 - 600000000000;
	PushWindow w;
	w.start_ns = base + int64_t(i) * 15000000000;
	w.end_ns = w.start_ns + 15000000000;
	w.profile.bytes = small_pprof(w.start_ns);
	w.samples = 42;
	return w;
}

// Window i as an OTLP push carries it: the request, not compressed.
PushWindow otlp_window(int i)
{
	PushWindow w = window(i);
	std::ostringstream out;
	write_otlp(out, small_profile(w.start_ns), {});
	w.profile = {ReportFormat::Otlp, out.str()};
	return w;
}

bool has_header(const PushRequest &request, const std::string &header)
{
	return std::find(request.headers.begin(), request.headers.end(), header) != request.headers.end();
}

// stderr lines a Pusher wrote, kept for the test.
struct LogLines {
	std::mutex mutex;
	std::vector<std::string> lines;
	std::function<void(const std::string &)> sink()
	{
		return [this](const std::string &line) {
			std::lock_guard lock(mutex);
			lines.push_back(line);
		};
	}
	std::vector<std::string> get()
	{
		std::lock_guard lock(mutex);
		return lines;
	}
	size_t count(const std::string &part)
	{
		auto all = get();
		return std::count_if(all.begin(), all.end(), [&](const std::string &l) { return contains(l, part); });
	}
};

// Waits up to seconds for done(): generous, since only a failure waits that long.
template <class F>
bool eventually(F done, double seconds = 15)
{
	const double end = now() + seconds;
	while (!done()) {
		if (now() > end)
			return false;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return true;
}

// A transport that answers from a list (then 200), or holds each request until stop().
struct FakeTransport : PushTransport {
	struct Shared {
		std::mutex mutex;
		std::condition_variable stopped_cv;
		std::vector<Result<PushResponse>> answers;
		std::vector<PushRequest> requests;
		bool hold = false, stopped = false;
	};
	std::shared_ptr<Shared> shared = std::make_shared<Shared>();

	Result<PushResponse> send(const PushRequest &request) override
	{
		std::unique_lock lock(shared->mutex);
		shared->requests.push_back(request);
		if (shared->hold)
			shared->stopped_cv.wait(lock, [&] { return shared->stopped; });
		if (shared->stopped)
			return Error("stopped");
		if (!shared->answers.empty()) {
			Result<PushResponse> answer = shared->answers.front();
			shared->answers.erase(shared->answers.begin());
			return answer;
		}
		PushResponse response;
		response.status = 200;
		return response;
	}
	void stop() override
	{
		std::lock_guard lock(shared->mutex);
		shared->stopped = true;
		shared->stopped_cv.notify_all();
	}
};

PushResponse http(long status, std::string body = "")
{
	PushResponse r;
	r.status = status;
	r.body = std::move(body);
	return r;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("push: Pyroscope URLs: /ingest tells the format, or gets added to the server's URL")
{
	auto [error, config] = resolved("http://pyro:4040/ingest");
	CHECK(error.ok());
	CHECK(config.format == PushFormat::Pyroscope);
	CHECK(config.url == "http://pyro:4040/ingest");

	CHECK(resolved("http://pyro:4040", PushFormat::Pyroscope).second.url == "http://pyro:4040/ingest");
	CHECK(resolved("http://pyro:4040/", PushFormat::Pyroscope).second.url == "http://pyro:4040/ingest");
	CHECK(resolved("https://example.com/pyroscope/", PushFormat::Pyroscope).second.url ==
	      "https://example.com/pyroscope/ingest");
	CHECK(resolved("http://pyro:4040/ingest/", PushFormat::Pyroscope).second.url == "http://pyro:4040/ingest");
	// Credentials stay in the URL for libcurl's basic authentication.
	CHECK(resolved("https://user:key@profiles.example.net", PushFormat::Pyroscope).second.url ==
	      "https://user:key@profiles.example.net/ingest");
	CHECK(contains(resolved("http://pyro:4040/ingest", PushFormat::Parca).first.error(), "--push-format says parca"));
	// ...and out of stderr.
	CHECK(url_for_humans("https://user:key@profiles.example.net/ingest") == "https://profiles.example.net/ingest");
	CHECK(url_for_humans("http://pyro:4040/ingest") == "http://pyro:4040/ingest");
}

TEST_CASE("push: Parca URLs: WriteRaw's gRPC method path tells the format, or gets added")
{
	auto [error, config] = resolved(std::string("http://parca:7070") + parca_method);
	CHECK(error.ok());
	CHECK(config.format == PushFormat::Parca);
	CHECK(config.url == std::string("http://parca:7070") + parca_method);

	CHECK(resolved("http://parca:7070", PushFormat::Parca).second.url ==
	      std::string("http://parca:7070") + parca_method);
	CHECK(resolved("https://parca.example.com/prefix/", PushFormat::Parca).second.url ==
	      std::string("https://parca.example.com/prefix") + parca_method);
	// --help's example lacked the package's "parca." once: named, with the right path.
	std::string wrong = resolved("http://parca:7070/profilestore.v1alpha1.ProfileStoreService/WriteRaw").first.error();
	CHECK(contains(wrong, "another service"));
	CHECK(contains(wrong, parca_method));
	// The JSON gateway's route is recognized as Parca's and refused, saying what to give.
	std::string gateway = resolved("http://parca:7070/api/profiles/writeraw").first.error();
	CHECK(contains(gateway, "gRPC-web"));
	CHECK(contains(gateway, "http://HOST:7070"));
	CHECK(contains(resolved(std::string("http://parca:7070") + parca_method, PushFormat::Pyroscope).first.error(),
		       "--push-format says pyroscope"));
}

TEST_CASE("push: OTLP URLs: /v1development/profiles tells the format; a server's URL gets it; another path is kept")
{
	auto [error, config] = resolved("http://collector:4318/v1development/profiles");
	REQUIRE(error.ok());
	CHECK(config.format == PushFormat::Otlp);
	CHECK(config.url == "http://collector:4318/v1development/profiles");
	CHECK(resolved("http://collector:4318", PushFormat::Otlp).second.url ==
	      "http://collector:4318/v1development/profiles");
	CHECK(resolved("https://gw.example.com/otlp/profiles", PushFormat::Otlp).second.url ==
	      "https://gw.example.com/otlp/profiles");
	// Without --push-format, a path that is no API's is still refused, naming every API.
	const Status unknown = resolved("http://collector:4318/otlp").first;
	CHECK(contains(unknown.error(), "an OTLP server"));
	CHECK(contains(unknown.error(), "pyroscope|parca|otlp"));
	CHECK(contains(unknown.error(), "/v1development/profiles (OTLP)"));
}

TEST_CASE("push: the OTLP request: the window's request gzipped, as application/x-protobuf, to the URL as resolved")
{
	auto [error, config] = resolved("http://collector:4318", PushFormat::Otlp);
	REQUIRE(error.ok());
	PushWindow w = window(0);
	w.profile = {ReportFormat::Otlp, "\x0a\x00\x12\x00"};
	const PushRequest request = build_push_request(config, w);
	CHECK(request.url == "http://collector:4318/v1development/profiles");
	CHECK(has_header(request, "Content-Type: application/x-protobuf"));
	CHECK(has_header(request, "Content-Encoding: gzip"));
	CHECK(gunzip(request.body) == w.profile.bytes);
	// profile sets the encoding itself: a header may not say another.
	CHECK(!check_push_header("Content-Encoding: br").ok());
}

TEST_CASE("push: OTLP answers: a partial_success's rejections are said of a delivered window; a google.rpc.Status's message")
{
	// ExportProfilesServiceResponse { partial_success (1) { rejected_profiles (1): 2, error_message (2) } }
	const std::string partial = std::string("\x0a\x0d\x08\x02\x12\x09too large", 15);
	PushVerdict verdict = judge_push_response(PushFormat::Otlp, http(200, partial));
	CHECK(verdict.outcome == PushOutcome::Delivered);
	CHECK(verdict.reason == "2 profiles rejected: too large");
	// An empty partial_success, or none: all taken.
	CHECK(judge_push_response(PushFormat::Otlp, http(200, std::string("\x0a\x00", 2))).reason.empty());
	CHECK(judge_push_response(PushFormat::Otlp, http(200)).reason.empty());
	// Rejected none, but a warning: said.
	CHECK(judge_push_response(PushFormat::Otlp, http(200, std::string("\x0a\x06\x12\x04slow", 8))).reason ==
	      "0 profiles rejected: slow");
	// google.rpc.Status { code (1): 3, message (2): "bad dictionary" }
	verdict = judge_push_response(PushFormat::Otlp, http(400, std::string("\x08\x03\x12\x0e" "bad dictionary", 18)));
	CHECK(verdict.outcome == PushOutcome::Refused);
	CHECK(verdict.reason == "HTTP 400: bad dictionary");
	// A body that is no Status: its first line, as for the others.
	CHECK(judge_push_response(PushFormat::Otlp, http(503, "overloaded\r\n")).reason == "HTTP 503: overloaded");
}

TEST_CASE("push: URLs that cannot be used are one line each")
{
	CHECK(contains(resolved("http://server:4040").first.error(), "add --push-format pyroscope|parca"));
	CHECK(contains(resolved("http://server:4040/somewhere").first.error(), "/ingest (Pyroscope)"));
	CHECK(contains(resolved("ftp://server/ingest").first.error(), "not an http:// or https:// URL"));
	CHECK(!resolved("http:///ingest").first.ok());
	CHECK(contains(resolved("http://server:4040/ingest?tenant=a").first.error(), "query"));
	CHECK(contains(resolved("http://server:4040/ingest#x").first.error(), "fragment"));
	CHECK(!resolved("http://server:port/ingest").first.ok());
	for (std::string url : {"http://server:4040", "http://server:4040/ingest?x", "ftp://a/ingest"}) {
		std::string error = resolved(url).first.error();
		CAPTURE(url);
		CHECK(error.find('\n') == std::string::npos);
		CHECK(error.starts_with("--push: "));
	}
}

TEST_CASE("push: the host name defaults to this machine's, the service name to the host name")
{
	PushConfig config;
	config.url = "http://pyro:4040/ingest";
	REQUIRE(resolve_push_target(config).ok());
	char name[256] = {};
	REQUIRE(gethostname(name, sizeof(name) - 1) == 0);
	CHECK(config.host == name);
	CHECK(config.app == config.host);

	config = PushConfig();
	config.url = "http://pyro:4040/ingest";
	config.host = "odd{host},=x";
	config.app = "web";
	REQUIRE(resolve_push_target(config).ok());
	CHECK(config.host == "odd_host___x"); // would break Pyroscope's name{label=value}
	CHECK(config.app == "web");
}

TEST_CASE("push: the Pyroscope request: /ingest?name=app{hostname=...}&from&until&format=pprof, the body raw")
{
	auto [error, config] = resolved("http://pyro:4040/ingest");
	REQUIRE(error.ok());
	config.frequency = 49;
	PushWindow w;
	w.start_ns = 1700000000500000000;
	w.end_ns = 1700000015200000000;
	w.profile.bytes = small_pprof(w.start_ns);
	PushRequest request = build_push_request(config, w);
	CHECK(request.url == "http://pyro:4040/ingest?name=web%7Bhostname%3Dtest-host%7D"
			     "&from=1700000000&until=1700000015&format=pprof&sampleRate=49"
			     "&spyName=ebpfspy&units=samples&aggregationType=sum");
	CHECK(has_header(request, "Content-Type: application/octet-stream"));
	CHECK(has_header(request, std::string("User-Agent: profile/") + PROFILE_VERSION));
	CHECK(request.headers.size() == 2);
	CHECK(request.body == w.profile.bytes);

	// Sampling every N ns of CPU time: the rate it comes to.
	config.frequency = 0;
	config.period_ns = 10000000;
	CHECK(contains(build_push_request(config, w).url, "&sampleRate=100&"));
}

TEST_CASE("push: the Parca request: one gRPC-web frame holding WriteRawRequest, labels and the gzipped pprof")
{
	auto [error, config] = resolved("http://parca:7070", PushFormat::Parca);
	REQUIRE(error.ok());
	PushWindow w = window(0);
	PushRequest request = build_push_request(config, w);
	CHECK(request.url == std::string("http://parca:7070") + parca_method);
	CHECK(has_header(request, "Content-Type: application/grpc-web+proto"));
	CHECK(has_header(request, "X-Grpc-Web: 1"));
	CHECK(has_header(request, std::string("User-Agent: profile/") + PROFILE_VERSION));

	const std::string &body = request.body;
	REQUIRE(body.size() > 5);
	CHECK(body[0] == 0); // not compressed, not a trailer
	uint32_t length = 0;
	for (int i = 1; i <= 4; i++)
		length = length << 8 | static_cast<unsigned char>(body[i]);
	CHECK(length == body.size() - 5);

	// WriteRawRequest { series = 2 } with normalized = 3 false, so absent; no tenant.
	std::vector<Field> request_fields = fields(std::string_view(body).substr(5));
	REQUIRE(request_fields.size() == 1);
	CHECK(request_fields[0].number == 2);
	// RawProfileSeries { labels = 1, samples = 2 }
	std::vector<Field> series = fields(request_fields[0].bytes);
	REQUIRE(series.size() == 2);
	CHECK(series[0].number == 1);
	CHECK(series[1].number == 2);
	std::map<std::string, std::string> labels;
	for (const Field &label : fields(series[0].bytes)) {
		REQUIRE(label.number == 1); // LabelSet.labels
		std::vector<Field> parts = fields(label.bytes);
		REQUIRE(parts.size() == 2);
		CHECK(parts[0].number == 1); // Label.name
		CHECK(parts[1].number == 2); // Label.value
		labels[parts[0].bytes] = parts[1].bytes;
	}
	CHECK(labels == std::map<std::string, std::string>{
				{"__name__", "parca_agent_cpu"}, {"hostname", "test-host"}, {"service_name", "web"}});
	std::vector<Field> sample = fields(series[1].bytes);
	REQUIRE(sample.size() == 1);
	CHECK(sample[0].number == 1); // RawSample.raw_profile
	CHECK(sample[0].bytes == w.profile.bytes);
}

TEST_CASE("push: off the CPU, a profile type of its own: Parca's agent's name and wallclock, Pyroscope's off_cpu")
{
	auto [error, parca] = resolved("http://parca:7070", PushFormat::Parca);
	REQUIRE(error.ok());
	parca.off_cpu = true;
	const std::string body = build_push_request(parca, window(0)).body;
	CHECK(contains(body, std::string("\n\x08__name__\x12\x0bparca_agent\n")));
	CHECK_FALSE(contains(body, "parca_agent_cpu"));
	CHECK(off_cpu_sample_type(PushFormat::Parca) == "wallclock");

	auto [pyroscope_error, pyroscope] = resolved("http://pyro:4040/ingest");
	REQUIRE(pyroscope_error.ok());
	pyroscope.frequency = 49; // -f's default: no rate off the CPU
	pyroscope.off_cpu = true;
	CHECK_FALSE(contains(build_push_request(pyroscope, window(0)).url, "sampleRate"));
	CHECK(off_cpu_sample_type(PushFormat::Pyroscope) == "off_cpu");
}

TEST_CASE("push: answers: 2xx delivered; 5xx, 429, 408 and no answer retried; other 4xx refuse the window")
{
	for (PushFormat format : {PushFormat::Pyroscope, PushFormat::Parca, PushFormat::Otlp}) {
		CAPTURE(int(format));
		for (long status : {500L, 502L, 503L, 504L, 429L, 408L})
			CHECK(judge_push_response(format, http(status)).outcome == PushOutcome::Retry);
		for (long status : {400L, 404L, 413L, 422L, 301L})
			CHECK(judge_push_response(format, http(status)).outcome == PushOutcome::Refused);
		// Credentials refused: no window would fare better.
		for (long status : {401L, 403L})
			CHECK(judge_push_response(format, http(status)).outcome == PushOutcome::Halt);
		const Result<PushResponse> down = Error("Failed to connect to pyro port 4040 after 0 ms: Connection refused");
		PushVerdict verdict = judge_push_response(format, down);
		CHECK(verdict.outcome == PushOutcome::Retry);
		CHECK(verdict.reason == down.error());
	}
	CHECK(judge_push_response(PushFormat::Pyroscope, http(200)).outcome == PushOutcome::Delivered);
	CHECK(judge_push_response(PushFormat::Pyroscope, http(204)).outcome == PushOutcome::Delivered);
	PushVerdict refused = judge_push_response(PushFormat::Pyroscope,
						  http(400, "{\"code\":\"invalid_argument\",\"message\":\"bad\"}\nmore"));
	CHECK(refused.outcome == PushOutcome::Refused);
	CHECK(refused.reason == "HTTP 400: {\"code\":\"invalid_argument\",\"message\":\"bad\"}");
	CHECK(judge_push_response(PushFormat::Pyroscope, http(503, "overloaded\r\n")).reason == "HTTP 503: overloaded");
}

TEST_CASE("push: Parca's answers: grpc-status in a header or the trailer frame, judged as grpc-gateway maps it")
{
	auto grpc = [](const char *status, const char *message = "") {
		PushResponse r = http(200);
		r.grpc_status = status;
		r.grpc_message = message;
		return r;
	};
	auto trailer = [](const std::string &text) {
		PushResponse r = http(200);
		r.body = std::string(5, '\0'); // the empty WriteRawResponse
		r.body += '\x80';
		for (int i = 3; i >= 0; i--)
			r.body += char(text.size() >> (8 * i));
		r.body += text;
		return r;
	};
	CHECK(judge_push_response(PushFormat::Parca, grpc("0")).outcome == PushOutcome::Delivered);
	CHECK(judge_push_response(PushFormat::Parca, trailer("grpc-status:0\r\ngrpc-message:\r\n")).outcome ==
	      PushOutcome::Delivered);
	// Unavailable, resource exhausted, deadline exceeded, internal, unknown, unimplemented
	// (501, a 5xx as the others).
	for (const char *status : {"14", "8", "4", "13", "2", "12"})
		CHECK(judge_push_response(PushFormat::Parca, grpc(status)).outcome == PushOutcome::Retry);
	// Invalid argument, failed precondition.
	for (const char *status : {"3", "9"})
		CHECK(judge_push_response(PushFormat::Parca, grpc(status)).outcome == PushOutcome::Refused);
	// Unauthenticated, permission denied: the credentials.
	for (const char *status : {"16", "7"}) {
		PushVerdict verdict = judge_push_response(PushFormat::Parca, grpc(status, "invalid token"));
		CHECK(verdict.outcome == PushOutcome::Halt);
		CHECK(verdict.reason.starts_with("the server refused the credentials (gRPC status "));
	}
	PushVerdict bad = judge_push_response(PushFormat::Parca,
					      trailer("grpc-status: 3\r\ngrpc-message: missing name label\r\n"));
	CHECK(bad.outcome == PushOutcome::Refused);
	CHECK(bad.reason == "gRPC status 3: missing name label");
	// 200 with no grpc-status at all: something else answered (the UI, a proxy).
	PushVerdict other = judge_push_response(PushFormat::Parca, http(200, "<!doctype html>"));
	CHECK(other.outcome == PushOutcome::Refused);
	CHECK(contains(other.reason, "not Parca's gRPC-web API"));
}

TEST_CASE("push: backoff doubles from the first wait to the longest, with jitter of +-20%")
{
	PushConfig config; // 1 s to 60 s
	CHECK(backoff_delay(config, 1, 0.5) == doctest::Approx(1));
	CHECK(backoff_delay(config, 2, 0.5) == doctest::Approx(2));
	CHECK(backoff_delay(config, 3, 0.5) == doctest::Approx(4));
	CHECK(backoff_delay(config, 6, 0.5) == doctest::Approx(32));
	CHECK(backoff_delay(config, 7, 0.5) == doctest::Approx(60));
	CHECK(backoff_delay(config, 1000, 0.5) == doctest::Approx(60));
	CHECK(backoff_delay(config, 1, 0) == doctest::Approx(0.8));
	CHECK(backoff_delay(config, 1, 0.999) == doctest::Approx(1.2).epsilon(0.01));
	CHECK(backoff_delay(config, 1000, 0.999) == doctest::Approx(60)); // never past the longest
}

TEST_CASE("push: the queue drops its oldest waiting windows past the count or the bytes, never the one in flight")
{
	auto w = [](size_t bytes, int64_t id) {
		PushWindow x;
		x.profile.bytes.assign(bytes, 'x');
		x.start_ns = id;
		return x;
	};
	auto ids = [](const std::vector<PushWindow> &windows) {
		std::vector<int64_t> out;
		for (const PushWindow &x : windows)
			out.push_back(x.start_ns);
		return out;
	};
	PushQueue by_count(2, 1 << 20);
	CHECK(by_count.push(w(10, 1)).empty());
	CHECK(by_count.push(w(10, 2)).empty());
	CHECK(ids(by_count.push(w(10, 3))) == std::vector<int64_t>{1});
	CHECK(ids(by_count.push(w(10, 4))) == std::vector<int64_t>{2});
	CHECK(by_count.count() == 2);
	CHECK(by_count.bytes() == 20);
	CHECK(by_count.take().start_ns == 3); // oldest first

	PushQueue by_bytes(100, 100);
	by_bytes.push(w(40, 1));
	by_bytes.push(w(40, 2));
	CHECK(ids(by_bytes.push(w(40, 3))) == std::vector<int64_t>{1});
	CHECK(ids(by_bytes.push(w(90, 4))) == std::vector<int64_t>{2, 3});
	CHECK(by_bytes.bytes() == 90);
	CHECK(ids(by_bytes.push(w(500, 5))) == std::vector<int64_t>{4}); // the newest stays, alone
	CHECK(by_bytes.count() == 1);

	PushQueue flight(2, 1 << 20);
	flight.push(w(10, 1));
	PushWindow sending = flight.take();
	CHECK(flight.push(w(10, 2)).empty());
	CHECK(ids(flight.push(w(10, 3))) == std::vector<int64_t>{2}); // 1 is in flight
	CHECK(flight.count() == 2);
	flight.put_back(std::move(sending)); // it failed: first in line again
	CHECK(flight.take().start_ns == 1);
	flight.done();
	CHECK(flight.count() == 1);
	CHECK(flight.bytes() == 10);
	CHECK(flight.clear() == std::pair<size_t, uint64_t>{1, 10});
	CHECK(flight.count() == 0);
}

TEST_CASE("push: a failure streak is one line as it starts and one as delivery resumes; windows go in order")
{
	auto [error, config] = resolved("http://pyro:4040/ingest");
	REQUIRE(error.ok());
	config.backoff_min_s = 0.01;
	config.backoff_max_s = 0.02;
	LogLines log;
	config.log = log.sink();
	auto transport = std::make_unique<FakeTransport>();
	auto shared = transport->shared;
	const Result<PushResponse> refused_connection = Error("Connection refused");
	shared->answers = {http(503, "busy"), refused_connection, http(500)};
	Pusher pusher(config, std::move(transport));
	for (int i = 0; i < 3; i++)
		pusher.push(window(i));
	pusher.finish(5);
	Pusher::Stats s = pusher.stats();
	CHECK(s.sent == 3);
	CHECK(s.attempts == 6);
	CHECK(s.failures == 3);
	CHECK(s.dropped == 0);
	CHECK(s.queued == 0);
	std::vector<std::string> lines = log.get();
	REQUIRE(lines.size() == 2);
	CHECK(lines[0].starts_with("profile: push: cannot deliver to http://pyro:4040/ingest: HTTP 503: busy;"));
	CHECK(lines[0].ends_with(" waiting)")); // 1 to 3, as the pushes and the first failure fall
	CHECK(lines[1] == "profile: push: delivered again after 3 failed attempts (2 more waiting)");
	// The window that failed went again first: the order pushed is the order delivered.
	std::vector<std::string> froms;
	for (const PushRequest &r : shared->requests)
		froms.push_back(r.url.substr(r.url.find("&from="), 17));
	CHECK(froms[0] == froms[3]);
	CHECK(froms[3] < froms[4]);
	CHECK(froms[4] < froms[5]);
}

TEST_CASE("push: a window the server refuses (4xx) is dropped, counted and named; the next goes on")
{
	auto [error, config] = resolved("http://pyro:4040/ingest");
	REQUIRE(error.ok());
	LogLines log;
	config.log = log.sink();
	auto transport = std::make_unique<FakeTransport>();
	transport->shared->answers = {http(400, "name: bad label\nstack")};
	Pusher pusher(config, std::move(transport));
	pusher.push(window(0));
	pusher.push(window(1));
	pusher.finish(5);
	Pusher::Stats s = pusher.stats();
	CHECK(s.sent == 1);
	CHECK(s.refused == 1);
	CHECK(s.dropped == 1);
	CHECK(s.dropped_bytes == window(0).profile.bytes.size());
	std::vector<std::string> lines = log.get();
	REQUIRE(lines.size() == 1);
	CHECK(contains(lines[0], "refused window "));
	CHECK(contains(lines[0], "(15 s, 42 samples, "));
	CHECK(contains(lines[0], ": HTTP 400: name: bad label; dropped"));
}

TEST_CASE("push: a request that never ends holds neither push() nor finish() past its seconds")
{
	auto [error, config] = resolved("http://pyro:4040/ingest");
	REQUIRE(error.ok());
	LogLines log;
	config.log = log.sink();
	auto transport = std::make_unique<FakeTransport>();
	auto shared = transport->shared;
	shared->hold = true;
	std::optional<Pusher> pusher(std::in_place, config, std::move(transport));
	pusher->push(window(0));
	REQUIRE(eventually([&] {
		std::lock_guard lock(shared->mutex);
		return shared->requests.size() == 1;
	}));
	// The request in flight hangs until finish() stops it: a push() that waited for it, or a
	// finish() that waited past its seconds, would take forever, not some milliseconds
	// more. The bounds are that, with room for a loaded machine under ASan.
	double start = now();
	pusher->push(window(1));
	CHECK(now() - start < 3);
	{
		std::lock_guard lock(shared->mutex);
		CHECK(!shared->stopped); // push() came back with the request still hanging
	}
	start = now();
	pusher->finish(0.2);
	CHECK(now() - start >= 0.19);
	CHECK(now() - start < 3);
	CHECK(pusher->stats().dropped == 2);
	CHECK(log.count("2 windows (") == 1);
	CHECK(log.count("not delivered to http://pyro:4040/ingest by the end: dropped") == 1);
	pusher->push(window(2)); // after the end
	CHECK(pusher->stats().dropped == 3);
	start = now();
	pusher.reset();
	CHECK(now() - start < 3);
}

TEST_CASE("push: an auth file: 'Bearer TOKEN' or 'USER:PASSWORD', 'Name: value' headers, comments; what is wrong names a line, never a secret")
{
	CHECK(auth_headers("Bearer tok-123\n") == std::vector<std::string>{"Authorization: Bearer tok-123"});
	// RFC 7617: base64 of user:password.
	CHECK(auth_headers("Aladdin:open sesame") ==
	      std::vector<std::string>{"Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="});
	CHECK(base64("") == "");
	CHECK(base64("f") == "Zg==");
	CHECK(base64("fo") == "Zm8=");
	CHECK(base64("foo") == "Zm9v");
	// A password may hold colons; the line's ends are trimmed, CRLF too.
	CHECK(auth_headers("  12345:glc_a:b=  \r\n") ==
	      std::vector<std::string>{"Authorization: Basic " + base64("12345:glc_a:b=")});
	CHECK(auth_headers("# Grafana Cloud\n\nX-Scope-OrgID: tenant-a\nbearer tok\nX-Api-Key:\tk1\n") ==
	      std::vector<std::string>{"Authorization: Bearer tok", "X-Scope-OrgID: tenant-a", "X-Api-Key:\tk1"});
	// Headers alone, and an Authorization of another scheme.
	CHECK(auth_headers("X-Api-Key: k1") == std::vector<std::string>{"X-Api-Key: k1"});
	CHECK(auth_headers("Authorization: Token abc") == std::vector<std::string>{"Authorization: Token abc"});

	// Comments alone: nothing to send (the systemd unit's fallback), and no error.
	CHECK(parse_push_auth("").ok());
	CHECK(auth_headers("# none: /etc/credstore/profile-agent.push-auth is missing\n").empty());
	CHECK(parse_push_auth("Bearer a\nuser:pw").error().starts_with("line 2: a second credential"));
	CHECK(parse_push_auth("Bearer a\nAuthorization: Basic eA==").error().starts_with("line 2: a second credential"));
	CHECK(parse_push_auth("Bearer ").error() == "line 1: a bearer token is printable ASCII without spaces");
	CHECK(parse_push_auth("Bearer a b").error() == "line 1: a bearer token is printable ASCII without spaces");
	const std::string alone = parse_push_auth("\nsekrit-token-alone\n").error();
	CHECK(alone == "line 2: expected 'Bearer TOKEN', 'USER:PASSWORD' or a 'Name: value' header");
	CHECK(!contains(alone, "sekrit"));
	CHECK(parse_push_auth("Content-Length: 3").error() == "line 1: profile sets Content-Length itself");
	CHECK(parse_push_auth(":pw").error().starts_with("line 1: expected"));
}

TEST_CASE("push: --push-header's form: a token, a colon, a value of printable characters; none profile sets itself")
{
	CHECK(check_push_header("X-Scope-OrgID: tenant-a").ok());
	CHECK(check_push_header("X-Scope-OrgID:tenant-a").ok());
	CHECK(check_push_header("x-gateway-route: a b c, ü").ok());
	CHECK(check_push_header("X-Scope-OrgID").error() == "expected 'Name: value'");
	CHECK(check_push_header(": x").error() == "expected 'Name: value', the name made of letters, digits and -");
	CHECK(check_push_header("X Scope: x").error() == "expected 'Name: value', the name made of letters, digits and -");
	CHECK(check_push_header("X-Scope-OrgID: ").error() == "the header 'X-Scope-OrgID' has no value");
	CHECK(check_push_header("X-A: b\r\nHost: evil").error() == "the value of 'X-A' holds a control character");
	CHECK(check_push_header("X-A: b\nc").error() == "the value of 'X-A' holds a control character");
	for (const char *own : {"Host: h", "content-type: x", "Content-Length: 1", "Transfer-Encoding: chunked",
				"Expect: 100-continue", "User-Agent: x", "X-Grpc-Web: 1", "Connection: close"})
		CHECK(contains(check_push_header(own).error(), "itself"));
}

namespace {

// A POSIX ACL as the system.posix_acl_access attribute holds it: version 2, then (tag,
// perm, id) entries, little-endian as the machine.
std::string acl(std::vector<std::tuple<uint16_t, uint16_t, uint32_t>> entries)
{
	std::string out(4, '\0');
	const uint32_t version = 2;
	std::memcpy(out.data(), &version, 4);
	for (auto [tag, perm, id] : entries) {
		char entry[8];
		std::memcpy(entry, &tag, 2);
		std::memcpy(entry + 2, &perm, 2);
		std::memcpy(entry + 4, &id, 4);
		out.append(entry, 8);
	}
	return out;
}

struct stat file_stat(mode_t mode, uid_t uid)
{
	struct stat st {};
	st.st_mode = mode;
	st.st_uid = uid;
	return st;
}

constexpr uint16_t USER_OBJ = 1, USER = 2, GROUP_OBJ = 4, GROUP = 8, MASK = 16, OTHER = 32;

} // namespace

TEST_CASE("push: a file of secrets: owned by root or this user, read and written by no one else (mode and ACL)")
{
	CHECK(check_secret_file(file_stat(S_IFREG | 0600, 0), "", 0).ok());
	CHECK(check_secret_file(file_stat(S_IFREG | 0400, 0), "", 0).ok());
	CHECK(check_secret_file(file_stat(S_IFREG | 0700, 0), "", 0).ok());
	CHECK(check_secret_file(file_stat(S_IFREG | 0640, 0), "", 0).error() == "its mode 0640 lets its group read it: chmod 600 it");
	CHECK(check_secret_file(file_stat(S_IFREG | 0604, 0), "", 0).error() == "its mode 0604 lets others read it: chmod 600 it");
	CHECK(check_secret_file(file_stat(S_IFREG | 0666, 0), "", 0).error() ==
	      "its mode 0666 lets its group and others read and write it: chmod 600 it");
	CHECK(!check_secret_file(file_stat(S_IFREG | 0602, 0), "", 0).ok());
	CHECK(check_secret_file(file_stat(S_IFDIR | 0700, 0), "", 0).error() == "it is not a regular file");
	// Owned by another user, who could write anything into it: refused, even as root.
	CHECK(check_secret_file(file_stat(S_IFREG | 0600, 1000), "", 0).error() ==
	      "it is owned by uid 1000, not root: another user could change it");
	// The service's own user (a systemd credential, chowned to it): accepted.
	CHECK(check_secret_file(file_stat(S_IFREG | 0400, 61234), "", 61234).ok());
	CHECK(contains(check_secret_file(file_stat(S_IFREG | 0400, 1000), "", 61234).error(), "not root nor uid 61234"));
	// systemd's other way: owned by root, read by the service's user through an ACL (the
	// mode's group bits are then the ACL's mask).
	const std::string systemd = acl({{USER_OBJ, 4, 0}, {USER, 4, 61234}, {GROUP_OBJ, 0, 0}, {MASK, 4, 0}, {OTHER, 0, 0}});
	CHECK(check_secret_file(file_stat(S_IFREG | 0440, 0), systemd, 61234).ok());
	CHECK(contains(check_secret_file(file_stat(S_IFREG | 0440, 0), systemd, 5000).error(), "its ACL lets uid 61234 read"));
	CHECK(contains(check_secret_file(file_stat(S_IFREG | 0440, 0),
					 acl({{USER_OBJ, 6, 0}, {GROUP_OBJ, 4, 0}, {MASK, 4, 0}, {OTHER, 0, 0}}), 0).error(),
		       "its ACL lets a group read"));
	CHECK(contains(check_secret_file(file_stat(S_IFREG | 0440, 0),
					 acl({{USER_OBJ, 6, 0}, {GROUP_OBJ, 0, 0}, {GROUP, 4, 100}, {MASK, 4, 0}, {OTHER, 0, 0}}), 0).error(),
		       "its ACL lets a group read"));
	// An entry the mask takes everything from gives nothing.
	CHECK(check_secret_file(file_stat(S_IFREG | 0400, 0),
				acl({{USER_OBJ, 6, 0}, {USER, 4, 1000}, {GROUP_OBJ, 4, 0}, {MASK, 0, 0}, {OTHER, 0, 0}}), 0).ok());
	CHECK(contains(check_secret_file(file_stat(S_IFREG | 0444, 0),
					 acl({{USER_OBJ, 4, 0}, {GROUP_OBJ, 0, 0}, {MASK, 0, 0}, {OTHER, 4, 0}}), 0).error(),
		       "lets others read"));
	CHECK(check_secret_file(file_stat(S_IFREG | 0400, 0), "xx", 0).error() == "its ACL cannot be read");
}

TEST_CASE("push: the secret files on disk: their mode, owner and ACL are checked on the file opened")
{
	TempDir dir;
	const std::string path = dir / "push-auth";
	write_file(path, "Bearer tok\n");
	REQUIRE(chmod(path.c_str(), 0600) == 0);
	const Result<std::string> text = read_secret_file(path);
	CHECK(text.ok());
	CHECK((text.ok() && *text == "Bearer tok\n"));
	REQUIRE(chmod(path.c_str(), 0644) == 0);
	CHECK(read_secret_file(path).error() ==
	      path + " holds secrets, but its mode 0644 lets its group and others read it: chmod 600 it");
	CHECK(read_secret_file(dir / "none").error() == "cannot open " + (dir / "none") + ": No such file or directory");
	REQUIRE(chmod(path.c_str(), 0600) == 0);
	if (geteuid() == 0) {
		REQUIRE(chown(path.c_str(), 65534, 65534) == 0);
		CHECK(contains(read_secret_file(path).error(), "owned by uid 65534, not root"));
		REQUIRE(chown(path.c_str(), 0, 0) == 0);
		// An ACL that lets nobody (65534) read it, as setfacl -m u:nobody:r would: refused.
		const std::string nobody = acl({{USER_OBJ, 6, 0}, {USER, 4, 65534}, {GROUP_OBJ, 0, 0}, {MASK, 4, 0}, {OTHER, 0, 0}});
		if (setxattr(path.c_str(), "system.posix_acl_access", nobody.data(), nobody.size(), 0) == 0) {
			CHECK(contains(read_secret_file(path).error(), "its ACL lets uid 65534 read or write it"));
		} else {
			MESSAGE("skipped the ACL: " << std::strerror(errno));
		}
	}
}

TEST_CASE("push: Retry-After: delta-seconds or an HTTP date, from now; anything else ignored")
{
	const time_t now = 1445412450; // Wed, 21 Oct 2015 07:27:30 GMT
	CHECK(parse_retry_after("5", now) == 5.0);
	CHECK(parse_retry_after(" 120 ", now) == 120.0);
	CHECK(parse_retry_after("0", now) == 0.0);
	CHECK(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == 30.0);
	CHECK(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now) == 0.0); // past
	CHECK(parse_retry_after("99999999999999", now) == 1e9);
	CHECK(!parse_retry_after("", now));
	CHECK(!parse_retry_after("soon", now));
	CHECK(!parse_retry_after("-5", now));
	// The verdict carries it for a retry only.
	PushResponse busy = http(429, "slow down");
	busy.retry_after = "7";
	PushVerdict verdict = judge_push_response(PushFormat::Pyroscope, busy);
	CHECK(verdict.outcome == PushOutcome::Retry);
	CHECK(verdict.retry_after_s == 7.0);
	CHECK(judge_push_response(PushFormat::Pyroscope, http(503)).retry_after_s == -1);
}

TEST_CASE("push: redirects are followed within the server only: same scheme, host and port")
{
	CHECK(redirect_refusal("https://pyro.example/ingest?a=1", "https://pyro.example/v2/ingest?a=1").ok());
	CHECK(redirect_refusal("https://pyro.example/ingest", "https://PYRO.example:443/ingest/").ok());
	CHECK(redirect_refusal("http://127.0.0.1:4040/ingest", "http://127.0.0.1:4040/x").ok());
	CHECK(redirect_refusal("https://127.0.0.1:4040/ingest", "https://localhost:4040/ingest").error() ==
	      "another host: localhost");
	CHECK(redirect_refusal("https://pyro.example/ingest", "https://evil.example/ingest").error() == "another host: evil.example");
	CHECK(redirect_refusal("https://pyro.example/ingest", "http://pyro.example/ingest").error() == "another scheme: http");
	CHECK(redirect_refusal("http://pyro.example/ingest", "https://pyro.example/ingest").error() == "another scheme: https");
	CHECK(redirect_refusal("https://pyro.example/ingest", "https://pyro.example:8443/ingest").error() == "another port: 8443");
	CHECK(!redirect_refusal("https://pyro.example/ingest", "gopher://").ok());
	// What the transport could not follow stops the pushes, as refused credentials do.
	PushResponse moved = http(307);
	moved.redirect = Error("https://localhost:4040/ingest (another host: localhost): not followed");
	PushVerdict verdict = judge_push_response(PushFormat::Pyroscope, moved);
	CHECK(verdict.outcome == PushOutcome::Halt);
	CHECK(verdict.reason == "the server redirected the push to " + moved.redirect.error());
}

TEST_CASE("push: each request carries --push-header's and the auth file's headers, for every API")
{
	for (PushFormat format : {PushFormat::Pyroscope, PushFormat::Parca, PushFormat::Otlp}) {
		auto [error, config] = resolved("https://p:4040", format);
		REQUIRE(error.ok());
		config.headers = {"X-Scope-OrgID: tenant-a", "Authorization: Bearer tok"};
		const PushRequest request = build_push_request(config, window(0));
		CHECK(has_header(request, "X-Scope-OrgID: tenant-a"));
		CHECK(has_header(request, "Authorization: Bearer tok"));
		CHECK(!contains(request.url, "tok"));
	}
}

TEST_CASE("push: credentials refused (401): one line, no more requests; windows wait in the queue and end counted refused")
{
	auto [error, config] = resolved("http://pyro:4040/ingest");
	REQUIRE(error.ok());
	config.backoff_min_s = 0.01;
	config.backoff_max_s = 0.02;
	config.queue_windows = 3;
	LogLines log;
	config.log = log.sink();
	auto transport = std::make_unique<FakeTransport>();
	auto shared = transport->shared;
	shared->answers = {http(401, "invalid token\n")};
	Pusher pusher(config, std::move(transport));
	pusher.push(window(0));
	REQUIRE(eventually([&] { return pusher.stats().attempts == 1; }));
	for (int i = 1; i < 5; i++)
		pusher.push(window(i));
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	Pusher::Stats s = pusher.stats();
	CHECK(s.attempts == 1); // never again: no loop against a server that said no
	CHECK(s.queued == 3);
	CHECK(s.dropped == 2); // past --push-queue 3
	CHECK(s.refused == 2);
	const double start = now();
	pusher.finish(5);
	CHECK(now() - start < 0.5); // nothing to wait for
	s = pusher.stats();
	CHECK(s.sent == 0);
	CHECK(s.dropped == 5);
	CHECK(s.refused == 5);
	CHECK(shared->requests.size() == 1);
	std::vector<std::string> lines = log.get();
	REQUIRE(lines.size() == 4);
	CHECK(lines[0] == "profile: push: http://pyro:4040/ingest: the server refused the credentials (HTTP 401: invalid "
			  "token): check --push-auth-file, then restart profile; no more windows are sent this run (1 waiting)");
	CHECK(contains(lines[1], "queue full"));
	CHECK(contains(lines[2], "queue full"));
	CHECK(contains(lines[3], "3 windows ("));
	CHECK(contains(lines[3], "not delivered to http://pyro:4040/ingest (the server refused the credentials): dropped"));
}

TEST_CASE("push: Retry-After sets the next attempt's wait, bounded by the backoff's longest")
{
	for (auto [asked, expected] : {std::pair{"1", 1.0}, {"60", 1.5}}) {
		CAPTURE(asked);
		auto [error, config] = resolved("http://pyro:4040/ingest");
		REQUIRE(error.ok());
		config.backoff_min_s = 0.01;
		config.backoff_max_s = 1.5;
		LogLines log;
		config.log = log.sink();
		auto transport = std::make_unique<FakeTransport>();
		PushResponse busy = http(429, "slow down");
		busy.retry_after = asked;
		transport->shared->answers = {busy};
		Pusher pusher(config, std::move(transport));
		const double start = now();
		pusher.push(window(0));
		REQUIRE(eventually([&] { return pusher.stats().sent == 1; }, 5));
		const double took = now() - start;
		CHECK(took >= expected - 0.05);
		CHECK(took < expected + 0.5);
		REQUIRE(!log.get().empty());
		CHECK(contains(log.get()[0], "HTTP 429: slow down; retrying with backoff (1 window waiting; the server asked "
					     "for a wait of " + std::string(asked) + " s)"));
	}
}

TEST_CASE("push backends: each row's URL rule on a bare URL and on a URL ending with its path")
{
	std::set<std::string_view> names;
	for (const PushBackend &backend : push_backends()) {
		CAPTURE(backend.name);
		CHECK(names.insert(backend.name).second);
		CHECK(push_backend_named(backend.name) == &backend);
		CHECK(push_backend(backend.format) == &backend);
		CHECK(backend.takes == (backend.format == PushFormat::Otlp ? ReportFormat::Otlp : ReportFormat::Pprof));
		const std::string endpoint = "http://h:1/prefix" + std::string(backend.path);
		// A URL of the server alone gets the path; one with a path of its own, when the
		// backend takes any, is the endpoint as given.
		auto [bare_status, bare] = resolved("http://h:1/", backend.format);
		REQUIRE(bare_status.ok());
		CHECK(bare.url == "http://h:1" + std::string(backend.path));
		auto [prefix_status, prefixed] = resolved("http://h:1/prefix/", backend.format);
		REQUIRE(prefix_status.ok());
		CHECK(prefixed.url == (backend.any_path ? "http://h:1/prefix" : endpoint));
		auto [auto_status, by_path] = resolved(endpoint);
		REQUIRE(auto_status.ok());
		CHECK(by_path.format == backend.format);
		CHECK(by_path.url == endpoint);
		// Another backend's path is refused, never extended.
		for (const PushBackend &other : push_backends())
			if (&other != &backend)
				CHECK(!resolved(endpoint, other.format).first.ok());
	}
	CHECK(!push_backend(PushFormat::Auto));
	CHECK(!push_backend_named("otel"));
}

} // TEST_SUITE

// --- real HTTP to tests/receiver.py ------------------------------------------------------

namespace {

// tests/receiver.py on 127.0.0.1, its records in a directory of its own.
class Receiver {
public:
	// extra: receiver.py's other options (--tls ... serves https).
	explicit Receiver(const std::string &script = "", int port = 0, const std::string &dir = "",
			  std::vector<std::string> extra = {})
		: dir_(dir), extra_(std::move(extra))
	{
		start(script, port);
	}
	void start(const std::string &script, int port)
	{
		const std::string python = find_tool("python3");
		REQUIRE_MESSAGE(!python.empty(), "python3 is not installed (scripts/install-deps.sh --test installs it)");
		std::vector<std::string> argv{python, output_dir() + "/../tests/receiver.py", "--dir", dir(),
					      "--port", std::to_string(port), "--script", script};
		argv.insert(argv.end(), extra_.begin(), extra_.end());
		process_.emplace(argv);
		const std::string line = process_->read_line();
		REQUIRE_MESSAGE(line.starts_with("port "), "receiver.py said '" << line << "'");
		port_ = std::stoi(line.substr(5));
	}
	void kill() { process_.reset(); }
	int port() const { return port_; }
	std::string url() const
	{
		const bool tls = std::find(extra_.begin(), extra_.end(), "--tls") != extra_.end();
		return (tls ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_);
	}
	std::string dir() const { return dir_.empty() ? temp_.path().string() : dir_; }
	// Every request's record, in arrival order.
	std::vector<std::string> records() const
	{
		std::vector<std::string> names;
		for (const auto &entry : std::filesystem::directory_iterator(dir()))
			if (entry.path().extension() == ".json")
				names.push_back(entry.path().string());
		std::sort(names.begin(), names.end());
		std::vector<std::string> out;
		for (const std::string &name : names)
			out.push_back(read_file(name));
		return out;
	}

private:
	TempDir temp_;
	std::string dir_;
	std::vector<std::string> extra_;
	std::optional<Background> process_;
	int port_ = 0;
	// The requests go straight to 127.0.0.1, whatever proxy the environment names.
	ScopedEnv no_proxy_{"no_proxy", "127.0.0.1,localhost"};
};

// What tests/parca_decode.mjs prints of a WriteRaw body file, decoded with Parca's own
// published definitions (npm @parca/client, which `make check` installs under the build
// output). nullopt, the test skipped (failed on CI), when node or the package is missing.
std::optional<CommandResult> parca_decoded(const std::string &body_file)
{
	const std::string node = find_tool("node");
	const std::string prefix = output_dir() + "/npm";
	if (node.empty()) {
		skip_test("node is missing: Parca's definitions cannot be read");
		return std::nullopt;
	}
	if (!std::filesystem::exists(prefix + "/node_modules/@parca/client/package.json")) {
		skip_test("@parca/client is not installed in " + prefix + " (make check installs it with npm)");
		return std::nullopt;
	}
	return run_command({node, output_dir() + "/../tests/parca_decode.mjs", prefix, body_file}, 60);
}

// A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate
// (CN profile-agent) it signed, made with the openssl command in a directory of their own;
// the keys mode 0600, as secrets are kept.
struct Certs {
	TempDir dir;
	std::string ca = dir / "ca.pem", server = dir / "server.pem", server_key = dir / "server.key",
		    client = dir / "client.pem", client_key = dir / "client.key";
	Certs()
	{
		const std::string openssl = find_tool("openssl");
		REQUIRE_MESSAGE(!openssl.empty(), "openssl is not installed (scripts/install-deps.sh --test installs it)");
		const std::vector<std::string> key = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
		auto run = [&](std::vector<std::string> args) {
			args.insert(args.begin(), openssl);
			CommandResult r = run_command(args, 30);
			REQUIRE_MESSAGE(r.status == 0, "openssl: " << r.err);
		};
		auto with_key = [&](std::vector<std::string> args) {
			args.insert(args.begin() + 1, key.begin(), key.end());
			return args;
		};
		run(with_key({"req", "-x509", "-keyout", dir / "ca.key", "-out", ca, "-days", "2", "-subj", "/CN=profile-test-ca"}));
		run(with_key({"req", "-keyout", server_key, "-out", dir / "server.csr", "-subj", "/CN=127.0.0.1", "-addext",
			      "subjectAltName=IP:127.0.0.1,DNS:localhost"}));
		run({"x509", "-req", "-in", dir / "server.csr", "-CA", ca, "-CAkey", dir / "ca.key", "-CAcreateserial",
		     "-out", server, "-days", "2", "-copy_extensions", "copy"});
		run(with_key({"req", "-keyout", client_key, "-out", dir / "client.csr", "-subj", "/CN=profile-agent"}));
		run({"x509", "-req", "-in", dir / "client.csr", "-CA", ca, "-CAkey", dir / "ca.key", "-CAcreateserial",
		     "-out", client, "-days", "2"});
		for (const std::string &k : {server_key, client_key})
			REQUIRE(chmod(k.c_str(), 0600) == 0);
	}
	// receiver.py's options for HTTPS that demands this client certificate, and with
	// authorization, this Authorization header (passed in a file: no command line shows it).
	std::vector<std::string> receiver_args(std::vector<std::string> more = {}, const std::string &authorization = "")
	{
		std::vector<std::string> args = {"--tls", server + "," + server_key, "--client-ca", ca};
		args.insert(args.end(), more.begin(), more.end());
		if (!authorization.empty())
			args.insert(args.end(), {"--auth-file", auth_file(authorization)});
		return args;
	}
	std::string auth_file(const std::string &authorization)
	{
		const std::string path = dir / ("expected-auth-" + std::to_string(auth_files++));
		write_file(path, authorization + "\n");
		return path;
	}
	int auth_files = 0;
};

PushConfig receiver_config(const Receiver &receiver, PushFormat format, LogLines &log)
{
	PushConfig config;
	config.url = receiver.url();
	config.format = format;
	config.host = "test-host";
	config.app = "web";
	config.frequency = 49;
	config.request_timeout_s = 10;
	config.connect_timeout_s = 2;
	config.backoff_min_s = 0.05;
	config.backoff_max_s = 0.2;
	config.log = log.sink();
	REQUIRE(resolve_push_target(config).ok());
	return config;
}

// window(0) pushed as format to receiver, and delivered.
void push_first_window(Receiver &receiver, PushFormat format)
{
	LogLines log;
	Pusher pusher(receiver_config(receiver, format, log), nullptr);
	pusher.push(window(0));
	pusher.finish(10);
	REQUIRE(pusher.stats().sent == 1);
}

const char *const empty_verdict = "\"verdict\": []";

} // namespace

TEST_SUITE("component") {

TEST_CASE("push: windows reach Pyroscope's /ingest and Parca's WriteRaw over HTTP, each request as the API says")
{
	for (PushFormat format : {PushFormat::Pyroscope, PushFormat::Parca}) {
		const bool parca = format == PushFormat::Parca;
		CAPTURE(parca);
		Receiver receiver;
		LogLines log;
		Pusher pusher(receiver_config(receiver, format, log), nullptr);
		for (int i = 0; i < 3; i++)
			pusher.push(window(i));
		pusher.finish(10);
		Pusher::Stats s = pusher.stats();
		CHECK(s.sent == 3);
		CHECK(s.attempts == 3);
		CHECK(s.dropped == 0);
		CHECK(s.total_ms > 0);
		CHECK(log.get().empty());
		std::vector<std::string> records = receiver.records();
		REQUIRE(records.size() == 3);
		for (size_t i = 0; i < records.size(); i++) {
			const std::string &r = records[i];
			INFO(r);
			CHECK(contains(r, empty_verdict));
			CHECK(contains(r, parca ? "\"api\": \"parca\"" : "\"api\": \"pyroscope\""));
			CHECK(contains(r, "\"samples/count\""));
			CHECK(contains(r, "\"cpu/nanoseconds\""));
			if (parca) {
				CHECK(contains(r, "\"__name__\": \"parca_agent_cpu\""));
				CHECK(contains(r, "\"service_name\": \"web\""));
				CHECK(contains(r, "\"normalized\": false"));
			} else {
				CHECK(contains(r, "\"app\": \"web\""));
				CHECK(contains(r, "\"from\": [\n   \"" + std::to_string(window(int(i)).start_ns / 1000000000)));
			}
			CHECK(contains(r, "\"hostname\": \"test-host\""));
			CHECK(std::filesystem::file_size(receiver.dir() + "/000" + std::to_string(i + 1) + ".pb") > 100);
		}
	}
}

TEST_CASE("push: what reaches the server is a pprof go tool pprof reads: Pyroscope's body as sent, Parca's raw_profile")
{
	const std::string go = find_tool("go");
	if (go.empty()) {
		skip_test("go is missing (apt-get install golang-go)");
		return;
	}
	for (PushFormat format : {PushFormat::Pyroscope, PushFormat::Parca}) {
		const bool parca = format == PushFormat::Parca;
		CAPTURE(parca);
		Receiver receiver;
		push_first_window(receiver, format);
		// Pyroscope's /ingest takes the body itself as the profile (gzipped); Parca's
		// WriteRaw wraps it, which the receiver took out and gunzipped.
		const std::string file = receiver.dir() + (parca ? "/0001.pb" : "/0001.body");
		CommandResult r = run_command({go, "tool", "pprof", "-raw", file}, 120);
		INFO(r.err);
		CHECK(r.status == 0);
		CHECK(contains(r.out, "hot_work"));
		CHECK(contains(r.out, "samples/count cpu/nanoseconds"));
	}
}

TEST_CASE("push: the WriteRaw request as sent decodes with Parca's published definitions (@parca/client)")
{
	Receiver receiver;
	push_first_window(receiver, PushFormat::Parca);
	const PushWindow w = window(0);
	const std::string body_file = receiver.dir() + "/0001.body";
	const std::optional<CommandResult> r = parca_decoded(body_file);
	if (!r)
		return;
	INFO(r->err);
	REQUIRE(r->status == 0);
	const size_t body_size = std::filesystem::file_size(body_file);
	CHECK(r->out == "frame 0 " + std::to_string(body_size - 5) +
				"\ntenant \"\"\nnormalized false\nseries 1\n"
				"label __name__=parca_agent_cpu\nlabel hostname=test-host\nlabel service_name=web\n"
				"samples 1\nraw_profile " +
				std::to_string(w.profile.bytes.size()) + " gzip\nexecutable_info 0\n");

	// The decoder is strict: a field WriteRawRequest does not define (number 9, a varint)
	// fails it, one line.
	std::string body = read_file(body_file);
	body += std::string("\x48\x01", 2);
	const uint32_t length = uint32_t(body.size() - 5);
	for (int i = 0; i < 4; i++)
		body[size_t(1 + i)] = char(length >> (8 * (3 - i)));
	write_file(body_file, body);
	const std::optional<CommandResult> bad = parca_decoded(body_file);
	REQUIRE(bad);
	CHECK(bad->status == 1);
	CHECK(contains(bad->err, "Unknown field 9"));
}

TEST_CASE("push: windows reach an OTLP endpoint as gzipped protobuf, each request whole; a partial_success is said")
{
	Receiver receiver("ok*1,partial:1");
	LogLines log;
	Pusher pusher(receiver_config(receiver, PushFormat::Otlp, log), nullptr);
	pusher.push(otlp_window(0));
	pusher.push(otlp_window(1));
	pusher.finish(10);
	const Pusher::Stats s = pusher.stats();
	CHECK(s.sent == 2);
	CHECK(s.dropped == 0);
	const std::vector<std::string> records = receiver.records();
	REQUIRE(records.size() == 2);
	for (size_t i = 0; i < records.size(); i++) {
		INFO(records[i]);
		CHECK(contains(records[i], empty_verdict));
		CHECK(contains(records[i], "\"api\": \"otlp\""));
		CHECK(contains(records[i], "\"path\": \"/v1development/profiles\""));
		const OtlpRequest r = decode_otlp(read_file(receiver.dir() + "/000" + std::to_string(i + 1) + ".pb"));
		CHECK(r.total() == 42);
		CHECK(r.folded() == std::map<std::string, uint64_t>{{"app-100;main;hot_work", 30},
								    {"app-100;main;do_syscall_64", 12}});
	}
	const std::vector<std::string> lines = log.get();
	REQUIRE(lines.size() == 1);
	CHECK(lines[0].starts_with("profile: push: " + receiver.url() + "/v1development/profiles took window "));
	CHECK(lines[0].ends_with(" in part: 1 profile rejected: scripted rejection"));
}

TEST_CASE("push: a server failing 3 times: every window arrives, one line as failures start, one as they end")
{
	Receiver receiver("500*3");
	LogLines log;
	Pusher pusher(receiver_config(receiver, PushFormat::Pyroscope, log), nullptr);
	pusher.push(window(0));
	pusher.push(window(1));
	pusher.finish(10);
	Pusher::Stats s = pusher.stats();
	CHECK(s.sent == 2);
	CHECK(s.failures == 3);
	CHECK(s.dropped == 0);
	std::vector<std::string> lines = log.get();
	REQUIRE(lines.size() == 2);
	CHECK(contains(lines[0], "cannot deliver to " + receiver.url() + "/ingest: HTTP 500: scripted 500;"));
	CHECK(lines[1] == "profile: push: delivered again after 3 failed attempts (1 more waiting)");
	std::vector<std::string> records = receiver.records();
	REQUIRE(records.size() == 5);
	for (const std::string &r : records)
		CHECK(contains(r, empty_verdict));
}

TEST_CASE("push: a stalled server: push() never waits for it, finish(1) ends after its second, what was left counted")
{
	Receiver receiver("stall:20");
	LogLines log;
	PushConfig config = receiver_config(receiver, PushFormat::Parca, log);
	config.request_timeout_s = 30;
	Pusher pusher(config, nullptr);
	// The server holds each request 20 s (and the client would wait 30): a push() that
	// waited for it would take that long; the bounds leave room for a loaded machine.
	double start = now();
	pusher.push(window(0));
	CHECK(now() - start < 5);
	REQUIRE(eventually([&] { return receiver.records().size() == 1; }, 15));
	start = now();
	pusher.push(window(1));
	CHECK(now() - start < 5);
	CHECK(pusher.stats().sent == 0); // the first request still hangs
	start = now();
	pusher.finish(1);
	const double took = now() - start;
	CHECK(took >= 0.9);
	CHECK(took < 10);
	Pusher::Stats s = pusher.stats();
	CHECK(s.sent == 0);
	CHECK(s.dropped == 2);
	CHECK(s.queued == 0);
	CHECK(log.count("2 windows (") == 1);
}

TEST_CASE("push: a receiver killed and started again on its port: the windows queued meanwhile arrive")
{
	TempDir dir;
	Receiver first("", 0, dir.path().string());
	const int port = first.port();
	LogLines log;
	Pusher pusher(receiver_config(first, PushFormat::Pyroscope, log), nullptr);
	pusher.push(window(0));
	REQUIRE(eventually([&] { return pusher.stats().sent == 1; }));
	first.kill();
	pusher.push(window(1));
	pusher.push(window(2));
	REQUIRE(eventually([&] { return pusher.stats().failures >= 1; }));
	Receiver second("", port, dir.path().string());
	pusher.finish(10);
	Pusher::Stats s = pusher.stats();
	CHECK(s.sent == 3);
	CHECK(s.dropped == 0);
	std::vector<std::string> lines = log.get();
	REQUIRE(lines.size() == 2);
	INFO(lines[0]);
	CHECK(contains(lines[0], "Connection refused"));
	CHECK(lines[0].ends_with(" waiting)"));
	CHECK(contains(lines[1], "delivered again after"));
	std::vector<std::string> records = second.records();
	REQUIRE(records.size() == 3);
	for (int i = 0; i < 3; i++) {
		CHECK(contains(records[i], empty_verdict));
		CHECK(contains(records[i], "\"from\": [\n   \"" + std::to_string(window(i).start_ns / 1000000000)));
	}
}

TEST_CASE("push: a queue of 2 with 5 windows pushed while the server is away: 3 dropped, counted, each named")
{
	TempDir dir;
	Receiver receiver("", 0, dir.path().string());
	const int port = receiver.port();
	receiver.kill();
	LogLines log;
	PushConfig config = receiver_config(receiver, PushFormat::Parca, log);
	config.queue_windows = 2;
	Pusher pusher(config, nullptr);
	for (int i = 0; i < 5; i++)
		pusher.push(window(i));
	Pusher::Stats s = pusher.stats();
	CHECK(s.dropped == 3);
	CHECK(s.queued == 2);
	uint64_t bytes = 0;
	for (int i = 0; i < 5; i++)
		bytes += window(i).profile.bytes.size();
	CHECK(s.dropped_bytes + s.queued_bytes == bytes);
	CHECK(log.count("queue full (--push-queue 2, --push-queue-bytes 64 MiB): dropped window ") == 3);
	// The server comes back: the two kept, the newest among them, arrive.
	Receiver again("", port, dir.path().string());
	pusher.finish(10);
	CHECK(pusher.stats().sent == 2);
	std::vector<std::string> records = again.records();
	REQUIRE(records.size() == 2);
	CHECK(contains(records[1], empty_verdict));
}

TEST_CASE("push: HTTPS with a private CA and a client certificate: the bearer token and the tenant arrive, and the window")
{
	Certs certs;
	for (PushFormat format : {PushFormat::Pyroscope, PushFormat::Parca}) {
		CAPTURE(int(format));
		Receiver receiver("", 0, "",
				  certs.receiver_args({"--require-header", "X-Scope-OrgID: tenant-a"}, "Bearer tok-3e1f"));
		LogLines log;
		PushConfig config = receiver_config(receiver, format, log);
		config.headers = {"X-Scope-OrgID: tenant-a"};
		const std::vector<std::string> auth = auth_headers("Bearer tok-3e1f\n");
		config.headers.insert(config.headers.end(), auth.begin(), auth.end());
		config.ca_file = certs.ca;
		config.cert_file = certs.client;
		config.key_file = certs.client_key;
		Pusher pusher(config, nullptr);
		pusher.push(window(0));
		pusher.push(window(1));
		pusher.finish(10);
		CHECK(pusher.stats().sent == 2);
		CHECK(log.get().empty());
		const std::vector<std::string> records = receiver.records();
		REQUIRE(records.size() == 2);
		for (const std::string &r : records) {
			INFO(r);
			CHECK(contains(r, empty_verdict));
			CHECK(contains(r, "\"tls\": true"));
			CHECK(contains(r, "\"client_cert\": \"profile-agent\""));
			CHECK(contains(r, "\"Authorization\": \"Bearer tok-3e1f\""));
			CHECK(contains(r, "\"X-Scope-OrgID\": \"tenant-a\""));
			CHECK(contains(r, "\"answer\": \"ok\""));
			CHECK(contains(r, "\"samples/count\""));
		}
	}
}

TEST_CASE("push: HTTPS with basic auth from an auth file's USER:PASSWORD")
{
	Certs certs;
	Receiver receiver("", 0, "", {"--tls", certs.server + "," + certs.server_key, "--auth-file",
				      certs.auth_file("Basic " + base64("12345:glc_pa:ss"))});
	LogLines log;
	PushConfig config = receiver_config(receiver, PushFormat::Pyroscope, log);
	config.headers = auth_headers("# Grafana Cloud: instance id and token\n12345:glc_pa:ss\n");
	config.ca_file = certs.ca;
	Pusher pusher(config, nullptr);
	pusher.push(window(0));
	pusher.finish(10);
	CHECK(pusher.stats().sent == 1);
	const std::vector<std::string> records = receiver.records();
	REQUIRE(records.size() == 1);
	CHECK(contains(records[0], "\"answer\": \"ok\""));
	CHECK(contains(records[0], "\"client_cert\": null"));
}

TEST_CASE("push: HTTPS that cannot be trusted or that wants a client certificate: retried, one line that says why")
{
	Certs certs;
	// The system's CAs do not know the test's CA.
	{
		Receiver receiver("", 0, "", certs.receiver_args());
		LogLines log;
		PushConfig config = receiver_config(receiver, PushFormat::Pyroscope, log);
		Pusher pusher(config, nullptr);
		pusher.push(window(0));
		pusher.finish(0.5);
		CHECK(pusher.stats().sent == 0);
		REQUIRE(!log.get().empty());
		INFO(log.get()[0]);
		CHECK(contains(log.get()[0], "certificate"));
		CHECK(contains(log.get()[0], "retrying with backoff"));
		CHECK(receiver.records().empty());
	}
	// Trusted, but without the client certificate the server demands.
	{
		Receiver receiver("", 0, "", certs.receiver_args());
		LogLines log;
		PushConfig config = receiver_config(receiver, PushFormat::Pyroscope, log);
		config.ca_file = certs.ca;
		Pusher pusher(config, nullptr);
		pusher.push(window(0));
		pusher.finish(0.5);
		CHECK(pusher.stats().sent == 0);
		REQUIRE(!log.get().empty());
		CHECK(contains(log.get()[0], "cannot deliver to " + receiver.url() + "/ingest: "));
		CHECK(receiver.records().empty());
	}
}

TEST_CASE("push: a wrong token gets 401: one line, one request, the windows counted refused at the end")
{
	Certs certs;
	Receiver receiver("", 0, "", certs.receiver_args({}, "Bearer right"));
	LogLines log;
	PushConfig config = receiver_config(receiver, PushFormat::Pyroscope, log);
	config.headers = auth_headers("Bearer wrong-9c2d");
	config.ca_file = certs.ca;
	config.cert_file = certs.client;
	config.key_file = certs.client_key;
	Pusher pusher(config, nullptr);
	pusher.push(window(0));
	REQUIRE(eventually([&] { return pusher.stats().attempts == 1; }));
	pusher.push(window(1));
	pusher.push(window(2));
	std::this_thread::sleep_for(std::chrono::milliseconds(500)); // several backoffs' worth
	pusher.finish(10);
	Pusher::Stats s = pusher.stats();
	CHECK(s.attempts == 1);
	CHECK(s.sent == 0);
	CHECK(s.dropped == 3);
	CHECK(s.refused == 3);
	CHECK(receiver.records().size() == 1);
	const std::vector<std::string> lines = log.get();
	REQUIRE(lines.size() == 2);
	CHECK(lines[0] == "profile: push: " + receiver.url() + "/ingest: the server refused the credentials (HTTP 401: "
			  "scripted 401): check --push-auth-file, then restart profile; no more windows are sent this run "
			  "(1 waiting)");
	CHECK(contains(lines[1], "3 windows ("));
	CHECK(contains(lines[1], "(the server refused the credentials): dropped"));
	for (const std::string &line : lines)
		CHECK(!contains(line, "wrong-9c2d"));
}

TEST_CASE("push: 429 with Retry-After, in seconds and as an HTTP date: the next attempt waits that long")
{
	Certs certs;
	for (const char *step : {"429:1", "429:date:2"}) {
		CAPTURE(step);
		Receiver receiver(step, 0, "", certs.receiver_args());
		LogLines log;
		PushConfig config = receiver_config(receiver, PushFormat::Pyroscope, log);
		config.ca_file = certs.ca;
		config.cert_file = certs.client;
		config.key_file = certs.client_key;
		config.backoff_min_s = 0.05;
		config.backoff_max_s = 5;
		Pusher pusher(config, nullptr);
		const double start = now();
		pusher.push(window(0));
		REQUIRE(eventually([&] { return pusher.stats().sent == 1; }, 8));
		const double took = now() - start;
		// An HTTP date has whole seconds: 2 s ahead is 1 to 2 s away.
		CHECK(took >= 0.9);
		CHECK(took < 3);
		const std::vector<std::string> lines = log.get();
		REQUIRE(lines.size() == 2);
		CHECK(contains(lines[0], "HTTP 429: slow down; retrying with backoff (1 window waiting; the server asked for a wait of "));
		CHECK(contains(lines[1], "delivered again after 1 failed attempt"));
		CHECK(receiver.records().size() == 2);
	}
}

TEST_CASE("push: a 307 to the same server is followed with the body and the credentials; one to another host is not")
{
	Certs certs;
	{
		Receiver receiver("307:same", 0, "", certs.receiver_args({}, "Bearer tok"));
		LogLines log;
		PushConfig config = receiver_config(receiver, PushFormat::Pyroscope, log);
		config.headers = auth_headers("Bearer tok");
		config.ca_file = certs.ca;
		config.cert_file = certs.client;
		config.key_file = certs.client_key;
		Pusher pusher(config, nullptr);
		pusher.push(window(0));
		pusher.finish(10);
		CHECK(pusher.stats().sent == 1);
		CHECK(pusher.stats().attempts == 1);
		CHECK(log.get().empty());
		const std::vector<std::string> records = receiver.records();
		REQUIRE(records.size() == 2);
		CHECK(contains(records[0], "\"answer\": \"307:same\""));
		CHECK(contains(records[1], "\"answer\": \"ok\""));
		CHECK(contains(records[1], empty_verdict));
		CHECK(contains(records[1], "\"Authorization\": \"Bearer tok\""));
	}
	{
		// A user name and password in the URL go with a redirect within the server too.
		Receiver receiver("307:same", 0, "", certs.receiver_args({}, "Basic " + base64("u:pa55")));
		LogLines log;
		PushConfig config = receiver_config(receiver, PushFormat::Pyroscope, log);
		config.url.insert(std::string("https://").size(), "u:pa55@");
		config.ca_file = certs.ca;
		config.cert_file = certs.client;
		config.key_file = certs.client_key;
		Pusher pusher(config, nullptr);
		pusher.push(window(0));
		pusher.finish(10);
		CHECK(pusher.stats().sent == 1);
		const std::vector<std::string> records = receiver.records();
		REQUIRE(records.size() == 2);
		CHECK(contains(records[0], "\"answer\": \"307:same\""));
		CHECK(contains(records[1], "\"answer\": \"ok\""));
	}
	{
		// localhost is this very receiver: had the redirect been followed, it would have
		// recorded a second request.
		Receiver receiver("307:other", 0, "", certs.receiver_args({}, "Bearer tok"));
		LogLines log;
		PushConfig config = receiver_config(receiver, PushFormat::Pyroscope, log);
		config.headers = auth_headers("Bearer tok");
		config.ca_file = certs.ca;
		config.cert_file = certs.client;
		config.key_file = certs.client_key;
		Pusher pusher(config, nullptr);
		pusher.push(window(0));
		pusher.push(window(1));
		pusher.finish(10);
		Pusher::Stats s = pusher.stats();
		CHECK(s.sent == 0);
		CHECK(s.attempts == 1);
		CHECK(s.refused == 2);
		CHECK(receiver.records().size() == 1);
		const std::vector<std::string> lines = log.get();
		REQUIRE(lines.size() == 2);
		CHECK(lines[0].starts_with("profile: push: " + receiver.url() + "/ingest: the server redirected the push to "
					   "https://localhost:" + std::to_string(receiver.port()) + "/ingest (another host: "
					   "localhost): not followed, so that the credentials go nowhere else; no more "
					   "windows are sent this run ("));
		CHECK(contains(lines[1], "(the server redirected elsewhere): dropped"));
	}
}

} // TEST_SUITE

// --- the real ./profile pushing its windows ------------------------------------------------

namespace {

// The .pb files a receiver kept, in arrival order.
std::vector<std::string> kept_profiles(const Receiver &receiver)
{
	std::vector<std::string> files;
	for (const auto &entry : std::filesystem::directory_iterator(receiver.dir()))
		if (entry.path().extension() == ".pb")
			files.push_back(entry.path().string());
	std::sort(files.begin(), files.end());
	return files;
}

// "profile: push: 3 windows sent to URL (4 requests, 1 failed, 0 windows dropped, 0 of them
// refused); ..."
struct PushLine {
	uint64_t sent = 0, requests = 0, failed = 0, dropped = 0, refused = 0;
	bool found = false;
};
PushLine push_line(const std::string &err)
{
	static const std::regex line("profile: push: ([0-9]+) windows? sent to \\S+ \\(([0-9]+) requests?, ([0-9]+) "
				     "failed, ([0-9]+) windows? dropped, ([0-9]+) of them refused\\)");
	std::smatch m;
	PushLine p;
	if (std::regex_search(err, m, line))
		p = {std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), std::stoull(m[4]), std::stoull(m[5]), true};
	return p;
}

// "profile: 5 windows: 480 samples taken, 480 stored" -> {5, 480}
std::pair<uint64_t, uint64_t> windows_line(const std::string &err)
{
	std::smatch m;
	if (std::regex_search(err, m, std::regex("profile: ([0-9]+) windows?: [0-9]+ samples? taken, ([0-9]+) stored")))
		return {std::stoull(m[1]), std::stoull(m[2])};
	return {0, 0};
}

std::string this_host()
{
	char name[256] = "";
	gethostname(name, sizeof(name) - 1);
	return name;
}

} // namespace

TEST_SUITE("integration") {

TEST_CASE("--push: every window of a run reaches Pyroscope's and Parca's API; go tool pprof finds split's hot functions with pid, comm and host" * doctest::test_suite(ASAN_TOO))
{
	require_root();
	for (const char *format : {"pyroscope", "parca"}) {
		CAPTURE(format);
		Receiver receiver;
		Split split;
		const SplitSpent before = split.spent();
		auto r = profile({"-p", std::to_string(split.pid()), "-f", "99", "--interval", "1", "--push", receiver.url(),
				  "--push-format", format, "--app", "split.cpu", "3"});
		const SplitSpent after = split.spent();
		INFO("stderr: " << r.err);
		CAPTURE(before);
		CAPTURE(after);
		REQUIRE(r.status == 0);
		CHECK(r.out.empty()); // the windows went to the server only
		const auto [windows, stored] = windows_line(r.err);
		CHECK(windows == 3);
		const PushLine push = push_line(r.err);
		CHECK(push.sent == 3);
		CHECK(push.dropped == 0);
		std::vector<std::string> records = receiver.records();
		REQUIRE(records.size() == 3);
		for (const std::string &record : records) {
			INFO(record);
			CHECK(contains(record, empty_verdict));
			CHECK(contains(record, std::string("\"api\": \"") + format + "\""));
		}
		// The bytes ./profile sent, read with Parca's own definitions.
		for (size_t i = 1; std::string(format) == "parca" && i <= records.size(); i++) {
			const std::optional<CommandResult> decoded = parca_decoded(receiver.dir() + "/000" + std::to_string(i) + ".body");
			if (!decoded)
				break;
			INFO(decoded->err);
			CHECK(decoded->status == 0);
			CHECK(contains(decoded->out, "\nnormalized false\nseries 1\nlabel __name__=parca_agent_cpu\nlabel hostname=" +
							     this_host() + "\nlabel service_name=split.cpu\nsamples 1\n"));
			CHECK(contains(decoded->out, " gzip\nexecutable_info 0\n"));
		}
		uint64_t three = 0, one = 0, samples = 0;
		for (const std::string &file : kept_profiles(receiver))
			for (const Trace &t : pprof_traces(file)) {
				samples += t.count;
				CHECK(t.label("pid") == std::to_string(split.pid()));
				CHECK(t.label("comm") == "split");
				CHECK(t.label("host") == this_host());
				if (!t.frames.empty() && t.frames[0] == "split_hot_three")
					three += t.count;
				if (!t.frames.empty() && t.frames[0] == "split_hot_one")
					one += t.count;
			}
		// Every sample of the run was pushed, once; split as split measured it.
		CHECK(samples == stored);
		CHECK(three + one >= 60); // 3 s at 99 Hz: a loaded machine gives fewer
		const SampledShare share = sampled_share(three, three + one, split_share(before, after), 0.03);
		CHECK_MESSAGE(share.ok, share);
	}
}

TEST_CASE("--push-format otlp from the OTEL_* environment with -o FILE.otlp: each window pushed is the file written, "
	  "whole; split's hot functions and thread; the environment's header, service and resource")
{
	require_root();
	Receiver receiver;
	TempDir dir;
	Split split;
	ScopedEnv endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url().c_str());
	ScopedEnv headers("OTEL_EXPORTER_OTLP_HEADERS", "X-Scope-OrgID=tenant-7");
	ScopedEnv service("OTEL_SERVICE_NAME", "split-svc");
	ScopedEnv attributes("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test");
	const SplitSpent before = split.spent();
	auto r = profile({"-p", std::to_string(split.pid()), "-f", "99", "--interval", "1", "--push-format", "otlp", "-o",
			  dir / "w-%H%M%S.otlp", "2"});
	const SplitSpent after = split.spent();
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 0);
	const auto [windows, stored] = windows_line(r.err);
	CHECK(windows == 2);
	CHECK(push_line(r.err).sent == 2);
	const std::vector<std::string> records = receiver.records();
	REQUIRE(records.size() == 2);
	for (const std::string &record : records) {
		INFO(record);
		CHECK(contains(record, empty_verdict));
		CHECK(contains(record, "\"api\": \"otlp\""));
		CHECK(contains(record, "\"X-Scope-OrgID\": \"tenant-7\""));
	}
	std::vector<std::string> written;
	for (const auto &entry : std::filesystem::directory_iterator(dir.path()))
		written.push_back(entry.path().string());
	std::sort(written.begin(), written.end());
	const std::vector<std::string> pushed = kept_profiles(receiver);
	REQUIRE(written.size() == 2);
	REQUIRE(pushed.size() == 2);
	uint64_t three = 0, one = 0, samples = 0;
	for (size_t i = 0; i < pushed.size(); i++) {
		const std::string request = read_file(pushed[i]);
		CHECK(request == read_file(written[i]));
		const OtlpRequest otlp = decode_otlp(request);
		REQUIRE(otlp.resources.size() == 1);
		const auto &resource = otlp.resources[0].attributes;
		CHECK(resource.at("service.name") == "split-svc");
		CHECK(resource.at("deployment.environment.name") == "test");
		CHECK(resource.at("host.name") == this_host());
		CHECK(resource.at("process.pid") == std::to_string(split.pid()));
		CHECK(resource.at("process.executable.name") == "split");
		samples += otlp.total();
		// Each sample names its thread: split's one, whose id is its process's.
		for (const OtlpRequest::Profile &profile : otlp.resources[0].profiles)
			for (const OtlpRequest::Sample &sample : profile.samples) {
				const auto attributes = otlp.attributes_of(sample.attributes);
				const auto thread = attributes.find("thread.id");
				REQUIRE(thread != attributes.end());
				CHECK(thread->second == std::to_string(split.pid()));
			}
		for (const auto &[stack, count] : otlp.folded()) {
			CHECK(stack.starts_with("split-" + std::to_string(split.pid()) + ";"));
			if (stack.ends_with(";split_hot_three"))
				three += count;
			if (stack.ends_with(";split_hot_one"))
				one += count;
		}
	}
	// Every sample of the run was pushed, once; split as split measured it.
	CHECK(samples == stored);
	CHECK(three + one >= 40); // 2 s at 99 Hz: a loaded machine gives fewer
	const SampledShare share = sampled_share(three, three + one, split_share(before, after), 0.03);
	CHECK_MESSAGE(share.ok, share);
}

TEST_CASE("--push-format otlp with a malformed OTEL_* variable: one line, exit 2, before anything loads")
{
	ScopedEnv endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9");
	ScopedEnv headers("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer secret,broken");
	auto r = profile({"--push-format", "otlp", "--interval", "1", "1"});
	CHECK(r.status == 2);
	CHECK(r.err.starts_with("profile: OTEL_EXPORTER_OTLP_HEADERS: entry 2 has no '=': expected KEY=VALUE, separated by "
				"commas"));
	CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
	CHECK(!contains(r.err, "secret"));
}

TEST_CASE("--push to a server that fails a while: no window is lost while the queue has room")
{
	require_root();
	Receiver receiver("500*3,ok");
	Background split({workload("split"), "30"});
	auto r = profile({"-p", std::to_string(split.pid()), "-f", "99", "--interval", "1", "--push",
			  receiver.url() + "/ingest", "5"});
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 0);
	const PushLine push = push_line(r.err);
	CHECK(push.sent == 5);
	CHECK(push.dropped == 0);
	CHECK(push.failed == 3);
	// One line when the failures began, one when delivery resumed: never one per retry.
	const std::vector<std::string> lines = split_lines(r.err);
	CHECK(std::count_if(lines.begin(), lines.end(),
			    [](const std::string &l) { return l.starts_with("profile: push: "); }) == 3);
	CHECK(contains(r.err, "HTTP 500"));
	uint64_t ok = 0;
	for (const std::string &record : receiver.records())
		ok += contains(record, "\"answer\": \"ok\"") && contains(record, empty_verdict);
	CHECK(ok == 5);
}

TEST_CASE("--push to a server that fails, stalls, then dies: windows past the queue's cap are counted and named, sampling never stops")
{
	require_root();
	TempDir dir;
	Receiver receiver("500*2,stall:30");
	const int port = receiver.port();
	Background split({workload("split"), "30"});
	PipedProcess run(profile_command({"-p", std::to_string(split.pid()), "-f", "99", "--folded", "--interval", "1",
					  "-o", dir / "w-%s.folded", "--push", receiver.url() + "/ingest",
					  "--push-queue", "3", "9"}));
	std::string out, err;
	// Failing, then stalled: at 5 s the server dies mid-request; at 7 s it is back.
	const double start = now();
	while (now() - start < 5)
		run.pump(100, &out, &err);
	receiver.kill();
	while (now() - start < 7)
		run.pump(100, &out, &err);
	Receiver again("ok", port, receiver.dir());
	while (run.open())
		run.pump(100, &out, &err);
	// Windows were dropped: the exit status says so.
	REQUIRE(run.wait() == 3);
	INFO("stderr: " << err);

	// Sampling went on through all of it: nine windows, each with split's samples.
	const auto [windows, stored] = windows_line(err);
	CHECK(windows == 9);
	size_t files = 0;
	for (const auto &entry : std::filesystem::directory_iterator(dir.path())) {
		files++;
		CHECK(total(parse_folded(read_file(entry.path()))) >= 30);
	}
	CHECK(files == 9);
	// Each window was delivered or dropped, and every drop was said.
	const PushLine push = push_line(err);
	REQUIRE(push.found);
	CHECK(push.dropped > 0);
	CHECK(push.sent + push.dropped == windows);
	const std::vector<std::string> lines = split_lines(err);
	CHECK(uint64_t(std::count_if(lines.begin(), lines.end(), [](const std::string &l) {
		      return contains(l, "dropped window ");
	      })) == push.dropped);
	uint64_t ok = 0;
	for (const std::string &record : again.records())
		ok += contains(record, "\"answer\": \"ok\"") && contains(record, empty_verdict);
	CHECK(ok == push.sent);
}

TEST_CASE("--push over HTTPS with --push-auth-file, --push-header and a client certificate: every window arrives with the token and the tenant; the token is in no process's cmdline, nor on stderr")
{
	require_root();
	Certs certs;
	TempDir dir;
	const std::string token = "tok-" + std::to_string(getpid()) + "-" + std::to_string(realtime_ns() % 1000000007);
	const std::string auth_file = dir / "push-auth";
	write_file(auth_file, "# the agent's token\nBearer " + token + "\n");
	REQUIRE(chmod(auth_file.c_str(), 0600) == 0);
	Receiver receiver("", 0, "",
			  certs.receiver_args({"--require-header", "X-Scope-OrgID: tenant-a"}, "Bearer " + token));
	Background split({workload("split"), "30"});
	PipedProcess run(profile_command({"-p", std::to_string(split.pid()), "-f", "99", "--interval", "1", "--push",
					  receiver.url() + "/ingest", "--push-auth-file", auth_file, "--push-header",
					  "X-Scope-OrgID: tenant-a", "--push-ca", certs.ca, "--push-cert", certs.client,
					  "--push-key", certs.client_key, "--app", "split.cpu", "3"}));
	std::string out, err;
	// While the agent runs (and has pushed), every process's command line, as ps reads it.
	while (receiver.records().empty() && run.open())
		run.pump(100, &out, &err);
	size_t processes = 0;
	bool found_profile = false;
	for (const auto &entry : std::filesystem::directory_iterator("/proc")) {
		const std::string name = entry.path().filename();
		if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0])))
			continue;
		const std::string cmdline = read_file(entry.path() / "cmdline");
		processes++;
		CHECK_MESSAGE(!contains(cmdline, token), "the token is in /proc/" << name << "/cmdline");
		found_profile = found_profile || (int(std::stoi(name)) == run.pid() && contains(cmdline, "--push-auth-file"));
	}
	CHECK(processes > 10);
	CHECK(found_profile);
	while (run.open())
		run.pump(100, &out, &err);
	REQUIRE(run.wait() == 0);
	INFO("stderr: " << err);
	CHECK(!contains(err, token));
	CHECK(!contains(out, token));
	const PushLine push = push_line(err);
	CHECK(push.sent == 3);
	CHECK(push.dropped == 0);
	CHECK(push.refused == 0);
	const std::vector<std::string> records = receiver.records();
	REQUIRE(records.size() == 3);
	for (const std::string &record : records) {
		INFO(record);
		CHECK(contains(record, empty_verdict));
		CHECK(contains(record, "\"answer\": \"ok\""));
		CHECK(contains(record, "\"Authorization\": \"Bearer " + token + "\""));
		CHECK(contains(record, "\"X-Scope-OrgID\": \"tenant-a\""));
		CHECK(contains(record, "\"client_cert\": \"profile-agent\""));
	}
	uint64_t samples = 0;
	for (const std::string &file : kept_profiles(receiver))
		for (const Trace &t : pprof_traces(file)) {
			samples += t.count;
			CHECK(t.label("comm") == "split");
		}
	CHECK(samples >= 50);
}

TEST_CASE("--push with a password in the URL: it works, one line says where the password belongs, and neither stderr nor the pushed pprof holds it")
{
	require_root();
	TempDir dir;
	const std::string expected = dir / "expected";
	write_file(expected, "Basic " + base64("u:pa55w0rd-7f") + "\n");
	Receiver receiver("", 0, "", {"--auth-file", expected});
	Background split({workload("split"), "30"});
	const std::string url = "http://u:pa55w0rd-7f@127.0.0.1:" + std::to_string(receiver.port()) + "/ingest";
	auto r = profile({"-p", std::to_string(split.pid()), "--interval", "1", "--push", url, "2"});
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 0);
	CHECK(push_line(r.err).sent == 2);
	CHECK(contains(r.err, "profile: --push: the URL's password is on the command line, which every user of this "
			      "machine can read (ps, /proc/PID/cmdline): put it in --push-auth-file\n"));
	CHECK(!contains(r.err, "pa55w0rd-7f"));
	// The command line is each pprof's comment: there without the password.
	for (const std::string &file : kept_profiles(receiver)) {
		CHECK(contains(read_file(file), "--push http://127.0.0.1:" + std::to_string(receiver.port()) + "/ingest"));
		CHECK(!contains(read_file(file), "pa55w0rd-7f"));
	}

	// The same password from an auth file, over http://: one line says it is unencrypted.
	const std::string auth_file = dir / "push-auth";
	write_file(auth_file, "u:pa55w0rd-7f\n");
	REQUIRE(chmod(auth_file.c_str(), 0600) == 0);
	const std::string plain = "http://127.0.0.1:" + std::to_string(receiver.port()) + "/ingest";
	r = profile({"-p", std::to_string(split.pid()), "--interval", "1", "--push", plain, "--push-auth-file", auth_file, "1"});
	REQUIRE(r.status == 0);
	CHECK(push_line(r.err).sent == 1);
	CHECK(contains(r.err, "profile: --push-auth-file: its credentials go to " + plain +
				      " unencrypted: an https:// URL keeps them from the network\n"));
	CHECK(!contains(r.err, "pa55w0rd-7f"));
	CHECK(receiver.records().size() == 3);
}

TEST_CASE("--push with a token the server refuses: one line, the run goes on to its end, every window counted refused")
{
	require_root();
	Certs certs;
	TempDir dir;
	const std::string auth_file = dir / "push-auth";
	write_file(auth_file, "Bearer wrong-5b7e\n");
	REQUIRE(chmod(auth_file.c_str(), 0400) == 0);
	Receiver receiver("", 0, "", certs.receiver_args({}, "Bearer right"));
	Background split({workload("split"), "30"});
	auto r = profile({"-p", std::to_string(split.pid()), "-f", "99", "--interval", "1", "--push", receiver.url() + "/ingest",
			  "--push-auth-file", auth_file, "--push-ca", certs.ca, "--push-cert", certs.client, "--push-key",
			  certs.client_key, "3"});
	INFO("stderr: " << r.err);
	REQUIRE(r.status == 3); // every window refused: the exit status says data was lost
	CHECK(windows_line(r.err).first == 3);
	const PushLine push = push_line(r.err);
	CHECK(push.sent == 0);
	CHECK(push.requests == 1);
	CHECK(push.dropped == 3);
	CHECK(push.refused == 3);
	CHECK(receiver.records().size() == 1);
	const std::vector<std::string> lines = split_lines(r.err);
	CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string &l) {
		      return contains(l, "the server refused the credentials (HTTP 401");
	      }) == 1);
	CHECK(!contains(r.err, "wrong-5b7e"));
}

TEST_CASE("--push's files checked before anything loads: an auth file others may read, a missing CA, a bad header: one line, exit 2")
{
	require_root();
	TempDir dir;
	const std::string auth_file = dir / "push-auth";
	write_file(auth_file, "Bearer tok-0a1b\n");
	REQUIRE(chmod(auth_file.c_str(), 0644) == 0);
	const std::vector<std::string> push = {"--interval", "1", "--push", "https://127.0.0.1:9/ingest"};
	auto with = [&](std::vector<std::string> more) {
		more.insert(more.begin(), push.begin(), push.end());
		more.push_back("1");
		return more;
	};
	struct Case {
		std::vector<std::string> args;
		std::string line;
	};
	const std::vector<Case> cases = {
		{with({"--push-auth-file", auth_file}), "profile: --push-auth-file: " + auth_file +
								" holds secrets, but its mode 0644 lets its group and others read it: chmod 600 it"},
		{with({"--push-auth-file", dir / "none"}), "profile: --push-auth-file: cannot open " + (dir / "none") +
								   ": No such file or directory"},
		{with({"--push-ca", dir / "ca.pem"}), "profile: --push-ca: cannot open " + (dir / "ca.pem") +
							      ": No such file or directory"},
		{with({"--push-header", "X-Scope-OrgID tenant"}),
		 "profile: invalid --push-header: expected 'Name: value' (see profile --help)"},
		{with({"--push-header", "Authorization: Bearer tok-0a1b"}),
		 "profile: --push-header Authorization: a secret on the command line, where every user can read it (ps, "
		 "/proc/PID/cmdline): put it in --push-auth-file (see profile --help)"},
	};
	for (const Case &c : cases) {
		auto r = profile(c.args, 10);
		CAPTURE(r.err);
		CHECK(r.status == 2);
		CHECK(r.err == c.line + "\n");
		CHECK(r.seconds < 1); // nothing loaded
	}
	REQUIRE(chmod(auth_file.c_str(), 0600) == 0);
	REQUIRE(chown(auth_file.c_str(), 65534, 65534) == 0);
	auto r = profile(with({"--push-auth-file", auth_file}), 10);
	CHECK(r.status == 2);
	CHECK(r.err == "profile: --push-auth-file: " + auth_file +
			       " holds secrets, but it is owned by uid 65534, not root: another user could change it\n");
}

TEST_CASE("--push: a run whose windows were dropped says so in its exit status (3)")
{
	require_root();
	Background split({workload("split"), "30"});
	Receiver refusing("400*100");
	auto r = profile({"-p", std::to_string(split.pid()), "-f", "99", "--interval", "1", "--push",
			  refusing.url() + "/ingest", "2"});
	INFO("stderr: " << r.err);
	CHECK(r.status == 3);
	CHECK(push_line(r.err).dropped > 0);
	CHECK(push_line(r.err).sent == 0);
}

TEST_CASE("a hung server is said while sampling goes on; after the first signal, a second ends the run at once, even in the last push's wait")
{
	require_root();
	Background split({workload("split"), "30"});
	Receiver stalled("stall:60");
	// The first window's request is never answered: said two windows later, while sampling.
	// The first SIGINT then ends sampling; the last windows' push waits on that server (up
	// to 10 s); the second SIGINT ends it all at once.
	PipedProcess run(profile_command({"-p", std::to_string(split.pid()), "--interval", "1", "--push",
					  stalled.url() + "/ingest"}));
	std::string out, err;
	const double start = now();
	while (now() - start < 30 && !contains(err, "no answer from"))
		run.pump(100, &out, &err);
	// Two windows' time at --interval 1: 2 s.
	CHECK(std::regex_search(err, std::regex("profile: push: no answer from " + stalled.url() +
						"/ingest for [2-5] s; sampling goes on")));
	kill(run.pid(), SIGINT);
	// Still under way 2 s after the first signal: a line says what, and what a second does;
	// and the pusher, 2 s into its last wait, says how long it goes on trying.
	const double first = now();
	const std::regex last_wait("profile: push: [0-9]+ windows? not delivered to " + stalled.url() +
				   "/ingest yet: trying until 10 s after the end \\(a stop signal ends it now\\)\n");
	while (now() - first < 9 && !(contains(err, "SIGINT again ends the run now") && std::regex_search(err, last_wait)))
		run.pump(100, &out, &err);
	CHECK(contains(err, "profile: still sending the last windows after SIGINT; SIGINT again ends the run now, "
			    "without sending the last windows\n"));
	CHECK(std::regex_search(err, last_wait));
	const double second = now();
	kill(run.pid(), SIGINT);
	while (run.open() && now() - second < 20)
		run.pump(100, &out, &err);
	const int status = run.wait();
	INFO("stderr: " << err);
	CHECK(status == 128 + SIGINT);
	// At once: well within the 10 s the last push would have waited.
	CHECK(now() - second < 5);
	CHECK(contains(err, "profile: SIGINT again while sending the last windows: ending now, without sending "
			    "the last windows\n"));
}

} // TEST_SUITE
