// push/curl_transport.cpp: requests through libcurl: one connection kept alive, stopped at
// once from another thread, TLS as --push-ca, --push-cert and --push-key say, redirects
// followed only within the server.
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string_view>

#include "base/handle.h"
#include "push/curl_url.h"
#include "push/push.h"

namespace {

constexpr size_t body_kept = 64 << 10; // of an answer: enough for its first line, or a trailer
constexpr int redirects_max = 5;

size_t on_body(char *data, size_t size, size_t count, void *user)
{
	auto *response = static_cast<PushResponse *>(user);
	const size_t n = size * count;
	if (response->body.size() < body_kept)
		response->body.append(data, std::min(n, body_kept - response->body.size()));
	return n;
}

// Header lines, one at a time; a status line starts the headers of another answer (after a
// 100 Continue), whose grpc-status counts alone.
size_t on_header(char *data, size_t size, size_t count, void *user)
{
	auto *response = static_cast<PushResponse *>(user);
	const size_t n = size * count;
	std::string_view line(data, n);
	while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
		line.remove_suffix(1);
	if (line.starts_with("HTTP/")) {
		response->grpc_status.clear();
		response->grpc_message.clear();
		response->retry_after.clear();
		return n;
	}
	const auto field = answer_field(line);
	if (!field)
		return n;
	const auto &[key, value] = *field;
	if (key == "grpc-status")
		response->grpc_status = value;
	else if (key == "grpc-message")
		response->grpc_message = value;
	else if (key == "retry-after")
		response->retry_after = value;
	return n;
}

class CurlTransport : public PushTransport {
public:
	explicit CurlTransport(const PushConfig &config);
	Result<PushResponse> send(const PushRequest &request) override;
	void stop() override;

private:
	// One request to url, without following a redirect (redirect gets its Location); the
	// answer, or why it could not be made.
	Result<PushResponse> perform(const std::string &url, const PushRequest &request, const curl_slist *headers,
				     std::string &redirect);

	Handle<CURLM, curl_multi_cleanup> multi_;
	Handle<CURL, curl_easy_cleanup> easy_;
	std::atomic<bool> stopped_{false};
	char error_[CURL_ERROR_SIZE] = {};
};

CurlTransport::CurlTransport(const PushConfig &config)
	: multi_(curl_multi_init()), easy_(curl_easy_init())
{
	if (!multi_ || !easy_)
		throw RunError("libcurl: cannot start");
	CURL *e = easy_.get();
	const long timeout_ms = std::max(1L, long(config.request_timeout_s * 1000));
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 std::min(timeout_ms, std::max(1L, long(config.connect_timeout_s * 1000))));
	// HTTP/1.1 even over TLS: an older Parca hands HTTP/2 with a gRPC-ish content type to its
	// native gRPC server, which gRPC-web is not.
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, long(CURL_HTTP_VERSION_1_1));
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, error_);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	// A request stopped while a host name is being looked up does not wait for the lookup.
	curl_easy_setopt(e, CURLOPT_QUICK_EXIT, 1L);
	// TLS verification and the *_proxy variables stay as libcurl has them: on. The system's
	// CAs unless --push-ca names others.
	if (!config.ca_file.empty())
		curl_easy_setopt(e, CURLOPT_CAINFO, config.ca_file.c_str());
	if (!config.cert_file.empty()) {
		curl_easy_setopt(e, CURLOPT_SSLCERT, config.cert_file.c_str());
		curl_easy_setopt(e, CURLOPT_SSLKEY, config.key_file.c_str());
	}
	// A user name and password in the URL: set on the handle as well, so that a redirect
	// send() follows (within the server) carries them too.
	CurlUrl url(curl_url());
	char *user = nullptr, *password = nullptr;
	if (url && curl_url_set(url.get(), CURLUPART_URL, config.url.c_str(), 0) == CURLUE_OK &&
	    curl_url_get(url.get(), CURLUPART_USER, &user, CURLU_URLDECODE) == CURLUE_OK) {
		Handle<char, curl_free> user_text(user);
		if (curl_url_get(url.get(), CURLUPART_PASSWORD, &password, CURLU_URLDECODE) == CURLUE_OK) {
			Handle<char, curl_free> password_text(password);
			curl_easy_setopt(e, CURLOPT_USERNAME, user);
			curl_easy_setopt(e, CURLOPT_PASSWORD, password);
		}
	}
	// Redirects are followed by send(), not libcurl: libcurl would carry the Authorization
	// header (a custom header to it) to any host a Location names.
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
}

Result<PushResponse> CurlTransport::send(const PushRequest &request)
{
	if (stopped_)
		return Error("stopped");
	Handle<curl_slist, curl_slist_free_all> headers;
	for (const std::string &header : request.headers) {
		curl_slist *list = curl_slist_append(headers.get(), header.c_str());
		if (!list)
			return Error("out of memory");
		headers.release();
		headers.reset(list);
	}
	// No "Expect: 100-continue" wait before a large body.
	if (curl_slist *list = curl_slist_append(headers.get(), "Expect:")) {
		headers.release();
		headers.reset(list);
	}
	// A redirect within the server (a path moved, a trailing slash) is followed, the body
	// sent again; one to another scheme, host or port is not: the credentials go with it.
	// Where a refused redirect pointed, for stderr: without credentials or the query.
	auto shown = [](const std::string &url) {
		const std::string text = url_for_humans(url);
		return text.substr(0, text.find('?'));
	};
	std::string url = request.url;
	for (int hop = 0;; hop++) {
		std::string redirect;
		Result<PushResponse> response = perform(url, request, headers.get(), redirect);
		if (redirect.empty() || !response.ok())
			return response;
		if (Status refusal = redirect_refusal(url, redirect); !refusal.ok())
			response->redirect = Error(shown(redirect) + " (" + refusal.error() +
						   "): not followed, so that the credentials go nowhere else");
		else if (hop == redirects_max)
			response->redirect = Error(shown(redirect) + ": more than " + std::to_string(redirects_max) +
						   " redirects, not followed");
		if (!response->redirect.ok())
			return response;
		url = redirect;
	}
}

Result<PushResponse> CurlTransport::perform(const std::string &url, const PushRequest &request,
					    const curl_slist *headers, std::string &redirect)
{
	PushResponse response;
	CURL *e = easy_.get();
	error_[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, url.c_str());
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, request.body.data());
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.size()));
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &response);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &response);

	CURLM *m = multi_.get();
	if (curl_multi_add_handle(m, e) != CURLM_OK)
		return Error("libcurl: cannot start a request");
	CURLcode result = CURLE_OK;
	bool done = false;
	std::string failed; // what curl_multi_perform said, when it failed
	while (!done && !stopped_) {
		int running = 0;
		if (CURLMcode rc = curl_multi_perform(m, &running); rc != CURLM_OK) {
			failed = curl_multi_strerror(rc);
			break;
		}
		int left = 0;
		while (CURLMsg *msg = curl_multi_info_read(m, &left)) {
			if (msg->msg == CURLMSG_DONE) {
				result = msg->data.result;
				done = true;
			}
		}
		// stop() wakes this poll at once; 1 s is only the longest sleep between checks.
		if (!done)
			curl_multi_poll(m, nullptr, 0, 1000, nullptr);
	}
	curl_multi_remove_handle(m, e);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, nullptr);
	if (!done)
		return Error(failed.empty() ? "stopped" : failed);
	if (result != CURLE_OK) {
		std::string error = error_[0] ? error_ : curl_easy_strerror(result);
		// libcurl may say "Couldn't connect to server" alone: the system's word is clearer.
		long os_errno = 0;
		if (curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK && os_errno) {
			const std::string system = std::strerror(int(os_errno));
			if (error.find(system) == std::string::npos)
				error += " (" + system + ")";
		}
		return Error(error);
	}
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &response.status);
	// 301, 302, 307 and 308 keep the POST (an ingest API that moved takes profiles where it
	// went); 303 asks for a GET, which no API here answers: judged as the 3xx it is.
	const char *location = nullptr;
	if ((response.status == 301 || response.status == 302 || response.status == 307 || response.status == 308) &&
	    curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location)
		redirect = location;
	return response;
}

void CurlTransport::stop()
{
	stopped_ = true;
	curl_multi_wakeup(multi_.get());
}

} // namespace

std::unique_ptr<PushTransport> make_curl_transport(const PushConfig &config)
{
	static std::once_flag once;
	std::call_once(once, [] {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			throw RunError("libcurl: cannot initialize");
	});
	return std::make_unique<CurlTransport>(config);
}
