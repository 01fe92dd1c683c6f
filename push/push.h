// push/push.h: sends each window, rendered as its server takes it, to a Pyroscope or Parca
// server, or to any OpenTelemetry (OTLP) profiles endpoint.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "report/report.h"

// --push-format: which backend's API --push speaks.
enum class PushFormat {
	Auto,      // from the URL's path: /ingest is Pyroscope's, .../WriteRaw or /writeraw Parca's
	Pyroscope, // Grafana Pyroscope's HTTP /ingest
	Parca,     // Parca's ProfileStoreService WriteRaw over HTTP
	Otlp,      // OTLP/HTTP's /v1development/profiles (OpenTelemetry Collector, Pyroscope, ...)
};

struct PushConfig {
	std::string url;                  // as typed; the full endpoint once resolved
	PushFormat format = PushFormat::Auto;
	std::string app;                  // service name; "" -> host name
	std::string host;                 // host name; "" -> gethostname()
	uint32_t queue_windows = 20;      // --push-queue
	uint64_t queue_bytes = 64ull << 20; // --push-queue-bytes
	uint64_t frequency = 0;           // Hz; 0 when sampling every period_ns of CPU time
	uint64_t period_ns = 0;
	bool off_cpu = false;             // --off-cpu: windows of time off the CPU, a profile type of its own
	double request_timeout_s = 30;    // a whole request
	// A request unanswered this long is said on stderr while the run goes on: two windows'
	// time (--interval), within 2 to 10 s, long before its timeout.
	double wait_said_s = 10;
	double connect_timeout_s = 5;     // its connection (never more than the whole)
	double backoff_min_s = 1;         // the wait after a first failure, doubling...
	double backoff_max_s = 60;        // ...up to this
	// "Name: value" lines every request carries: --push-header's, then the auth file's
	// (its Authorization among them). Secrets: never written to stderr.
	std::vector<std::string> headers;
	std::string ca_file;              // --push-ca: trust this CA's certificates, not the system's
	std::string cert_file, key_file;  // --push-cert, --push-key: a client certificate (mTLS)
	// Where the stderr lines go (each without its newline), from the delivery thread too;
	// empty: stderr.
	std::function<void(const std::string &)> log;
};

// The pprof sample type of time off the CPU as the server names it: Parca's agent sends
// wallclock/nanoseconds (shown as "Off-CPU"); Pyroscope takes off_cpu/nanoseconds as a type
// of its own.
std::string_view off_cpu_sample_type(PushFormat format);

// Checks the URL and settles the format: ok, with config.url the full endpoint
// (http://h:4040 with --push-format pyroscope -> http://h:4040/ingest) and config.app and
// config.host filled in; otherwise what is wrong (the caller prints it and exits 2).
Status resolve_push_target(PushConfig &config);

// One window of the run, its report already rendered in the format its backend takes.
struct PushWindow {
	RenderedProfile profile;
	int64_t start_ns = 0, end_ns = 0; // CLOCK_REALTIME
	uint64_t samples = 0;
};

// Delivers windows in the order pushed, oldest first, retrying with backoff while the
// server fails. Nothing it does waits for the network in the caller's thread: push() takes
// a mutex, finish() is bounded by its seconds, the destructor stops a request under way at
// once. Its stderr lines begin "profile: push: " and say what changed, never one per retry.
// A server that refuses the credentials (or redirects elsewhere) is sent nothing more: the
// windows wait, within the queue's bounds, and end counted as refused.
class PushTransport;
class Pusher {
public:
	// config: as resolve_push_target left it (its format settled). transport: how requests
	// go out; nullptr for libcurl (which throws RunError when it cannot start).
	explicit Pusher(PushConfig config, std::unique_ptr<PushTransport> transport = nullptr);
	~Pusher();
	Pusher(const Pusher &) = delete;
	Pusher &operator=(const Pusher &) = delete;

	// Queues the window. When the queue is then over --push-queue windows or
	// --push-queue-bytes, the oldest windows waiting are dropped, each named in one line.
	void push(PushWindow window);
	// The end of the run: goes on delivering for up to `seconds`, then stops; what is left is
	// dropped, in one line. Windows pushed afterwards are dropped as well. Called by the
	// destructor (with 0) when the caller did not.
	void finish(double seconds);

	struct Stats {
		uint64_t sent = 0;          // windows the server took
		uint64_t attempts = 0;      // requests made
		uint64_t failures = 0;      // requests that did not deliver their window
		uint64_t dropped = 0;       // windows lost: queue full, refused, left at finish()
		uint64_t dropped_bytes = 0;
		uint64_t refused = 0;       // of the dropped, those the server refused (4xx, or
		                            // left queued once it refused the credentials)
		double last_ms = 0, max_ms = 0, total_ms = 0; // request times, every attempt
		size_t queued = 0, queued_bytes = 0; // waiting, and the one in flight
	};
	Stats stats() const;

private:
	struct State;
	void run();
	void log(const std::string &line) const;
	// The line that says a request has waited long for its answer, once a request.
	std::optional<std::string> waiting_line(State &s, size_t waiting) const;

	PushConfig config_;
	std::string where_; // the URL, as stderr shows it
	std::unique_ptr<PushTransport> transport_;
	mutable std::mutex mutex_;
	std::condition_variable wake_;   // the worker: a window, the end
	std::condition_variable settled_; // finish(): the queue emptied
	std::unique_ptr<State> state_;
	std::thread worker_;
};

// --- the pieces, each testable without a network -----------------------------------------

// A POST request: the URL with its query, "Name: value" headers, the body.
struct PushRequest {
	std::string url;
	std::vector<std::string> headers;
	std::string body;
};

// The request that delivers window to a resolved target.
PushRequest build_push_request(const PushConfig &config, const PushWindow &window);

// What came back: a status and what the verdict reads. A transport that could not reach
// the server returns its error instead (a Result).
struct PushResponse {
	long status = 0;         // HTTP status
	std::string grpc_status; // the grpc-status header ("" when absent)
	std::string grpc_message;
	std::string body;        // its first 64 KiB
	std::string retry_after; // the Retry-After header ("" when absent)
	// Not ok: a redirect the transport would not follow, and why.
	Status redirect;
};

enum class PushOutcome {
	Delivered,
	Retry,   // the server failed or could not be reached: the window waits
	Refused, // the server answered that this window is wrong: it is dropped
	// The server will take no window as things are (it refused the credentials, or sent
	// them elsewhere): nothing more is sent this run, the windows wait in the queue.
	Halt,
};
struct PushVerdict {
	PushOutcome outcome = PushOutcome::Retry;
	// What failed, for stderr: "HTTP 503: overloaded"; when delivered, what the server
	// rejected of the window ("" when it took it all).
	std::string reason;
	double retry_after_s = -1; // Retry: the wait the server asked for; -1 when it did not
};
PushVerdict judge_push_response(PushFormat format, const Result<PushResponse> &response);

// One API --push speaks: a row of push_backends(). Adding one is an encoder and a row.
struct PushBackend {
	PushFormat format;
	const char *name;            // --push-format's
	std::string_view title;      // how errors name its server: "Pyroscope"
	std::string_view path;       // its endpoint, added to a URL that does not end with it
	// A URL with a path of its own is its endpoint as given (OTLP's endpoints may be any
	// path, a gateway's route): only a URL of the server alone gets `path`.
	bool any_path;
	std::string_view claimed_as; // how errors name a URL it recognises: "Pyroscope's /ingest"
	// Whether a URL's path (without a trailing '/') is meant for it.
	bool (*recognises)(std::string_view path);
	// Ok when it can take a path it recognises; otherwise why not. nullptr: every one.
	Status (*check_path)(const std::string &url, std::string_view path);
	ReportFormat takes;              // what its windows are rendered as
	std::string_view off_cpu_type;   // a pprof's sample type off the CPU, as it names it
	// The request's URL (with its query), its own headers and its body.
	void (*encode)(PushRequest &request, const PushConfig &config, const PushWindow &window);
	// What an answer that came back says (not a redirect).
	PushVerdict (*judge)(const PushResponse &response);
};

// Every backend, in --push-format's order, which is also the order --push's URL is tried in.
std::span<const PushBackend> push_backends();
// nullptr for PushFormat::Auto, or a name of none.
const PushBackend *push_backend(PushFormat format);
const PushBackend *push_backend_named(std::string_view name);

// The wait before retry after `failures` failed attempts in a row (1 or more): backoff_min_s
// doubling to backoff_max_s, times a jitter factor from [0.8, 1.2) picked by unit in [0, 1).
double backoff_delay(const PushConfig &config, unsigned failures, double unit);

// The windows waiting, oldest first, and the one being sent: bounded by count and bytes.
class PushQueue {
public:
	PushQueue(size_t max_windows, uint64_t max_bytes)
		: max_windows_(max_windows), max_bytes_(max_bytes) {}
	// Adds a window; returns the oldest waiting ones it pushed out, oldest first. The window in
	// flight is never pushed out, nor the one just added.
	std::vector<PushWindow> push(PushWindow window);
	bool waiting() const { return !windows_.empty(); }
	// The oldest window, now in flight, to be settled by done() or put_back().
	PushWindow take();
	void done();
	void put_back(PushWindow window); // its send failed: first in line again
	// Every window (in flight or not) gone, for finish(): the count and the bytes.
	std::pair<size_t, uint64_t> clear();
	size_t count() const { return windows_.size() + (in_flight_ ? 1 : 0); }
	uint64_t bytes() const { return bytes_; }

private:
	size_t max_windows_;
	uint64_t max_bytes_;
	std::deque<PushWindow> windows_;
	bool in_flight_ = false;
	uint64_t in_flight_bytes_ = 0;
	uint64_t bytes_ = 0; // waiting and in flight
};

// How requests leave. send() blocks until the answer, an error, the timeout, or stop();
// stop() (from any thread) makes the send under way and every later one return at once.
class PushTransport {
public:
	virtual ~PushTransport() = default;
	virtual Result<PushResponse> send(const PushRequest &request) = 0;
	virtual void stop() = 0;
};
// Throws RunError when libcurl cannot start.
std::unique_ptr<PushTransport> make_curl_transport(const PushConfig &config);

// --- credentials, headers, TLS files, redirects (push/auth.cpp) ---------------------------

// Ok when header is a "Name: value" line profile may send: a token for the name, a value
// of printable characters; otherwise why not, in a few words.
Status check_push_header(std::string_view header);

// What an auth file holds: its Authorization header and other headers, or what is wrong
// ("line 2: ...", never quoting a secret). Lines: "Bearer TOKEN", or "USER:PASSWORD" (no
// space after the first colon), at most one of them; "Name: value" (a colon, then a space)
// headers; blank lines and "#" comments. A file of comments alone holds nothing, and is
// no error.
struct PushAuth {
	std::vector<std::string> headers; // "Authorization: ..." first when there is one
};
Result<PushAuth> parse_push_auth(std::string_view text);

// Whether a file may hold secrets, from its fstat and its POSIX ACL (the
// system.posix_acl_access attribute, "" when it has none): owned by root or by euid (a
// systemd credential may be the service user's), a regular file, and no one else may read
// or write it: neither group nor others, nor any ACL entry of another user or a group.
// Ok when it may; otherwise why not ("its mode 0644 lets ...").
Status check_secret_file(const struct stat &st, std::string_view acl, uid_t euid);
// The text of path, read after check_secret_file; or an error naming path.
Result<std::string> read_secret_file(const std::string &path);

// --push-auth-file, --push-ca, --push-cert and --push-key, checked before anything loads:
// reads the auth file into config.headers, and opens the TLS files (the key as a secret).
// Ok, or what is wrong.
Status load_push_files(PushConfig &config, const std::string &auth_file);

// A "Name: value" line of an answer (a header, a gRPC-web trailer): its name in lower case
// and its value without the blanks before it; nullopt when the line has no colon.
std::optional<std::pair<std::string, std::string_view>> answer_field(std::string_view line);

// Retry-After's seconds from now: delta-seconds, or an HTTP date; nullopt when unreadable.
std::optional<double> parse_retry_after(std::string_view value, time_t now);

// Whether a request to from may follow a redirect to to: ok when both have the same
// scheme, host and port; otherwise why not ("another host: localhost").
Status redirect_refusal(const std::string &from, const std::string &to);

std::string base64(std::string_view data);

// The URL without its user name and password, for stderr.
std::string url_for_humans(const std::string &url);

// "2024-05-01T13:00:00 (15 s, 1234 samples, 56 KiB)": how stderr names a window.
std::string describe_window(const PushWindow &window);
