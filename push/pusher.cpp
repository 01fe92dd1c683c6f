// push/pusher.cpp: the queue of windows and the thread that delivers them, with backoff.
#include <time.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>

#include "base/diagnostics.h"
#include "push/push.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string size_text(uint64_t bytes)
{
	if (bytes >= 10ull << 20)
		return std::to_string((bytes + (1 << 19)) >> 20) + " MiB";
	return std::to_string((bytes + 1023) >> 10) + " KiB";
}

} // namespace

std::string describe_window(const PushWindow &window)
{
	const time_t start = time_t(window.start_ns / 1000000000);
	tm local{};
	char when[32] = "?";
	if (localtime_r(&start, &local))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &local);
	const long long seconds = std::llround(double(window.end_ns - window.start_ns) / 1e9);
	return std::string(when) + " (" + std::to_string(seconds) + " s, " +
	       std::to_string(window.samples) + (window.samples == 1 ? " sample, " : " samples, ") +
	       size_text(window.profile.bytes.size()) + ")";
}

double backoff_delay(const PushConfig &config, unsigned failures, double unit)
{
	double delay = config.backoff_min_s;
	for (unsigned i = 1; i < failures && delay < config.backoff_max_s; i++)
		delay *= 2;
	delay = std::min(delay, config.backoff_max_s);
	// Jitter, so that agents a server failure struck together do not return together.
	return std::min(delay * (0.8 + 0.4 * unit), config.backoff_max_s);
}

std::vector<PushWindow> PushQueue::push(PushWindow window)
{
	bytes_ += window.profile.bytes.size();
	windows_.push_back(std::move(window));
	std::vector<PushWindow> out;
	while (windows_.size() > 1 && (count() > max_windows_ || bytes_ > max_bytes_)) {
		bytes_ -= windows_.front().profile.bytes.size();
		out.push_back(std::move(windows_.front()));
		windows_.pop_front();
	}
	return out;
}

PushWindow PushQueue::take()
{
	PushWindow window = std::move(windows_.front());
	windows_.pop_front();
	in_flight_ = true;
	in_flight_bytes_ = window.profile.bytes.size();
	return window;
}

void PushQueue::done()
{
	bytes_ -= in_flight_bytes_;
	in_flight_ = false;
	in_flight_bytes_ = 0;
}

void PushQueue::put_back(PushWindow window)
{
	in_flight_ = false;
	in_flight_bytes_ = 0;
	windows_.push_front(std::move(window));
}

std::pair<size_t, uint64_t> PushQueue::clear()
{
	std::pair<size_t, uint64_t> gone{count(), bytes_};
	windows_.clear();
	in_flight_ = false;
	in_flight_bytes_ = bytes_ = 0;
	return gone;
}

struct Pusher::State {
	explicit State(const PushConfig &config) : queue(config.queue_windows, config.queue_bytes) {}
	PushQueue queue;
	Stats stats;
	bool stopping = false;    // the worker is to end
	bool finished = false;    // finish() has run: later windows are dropped
	unsigned streak = 0;      // failed attempts in a row
	std::string halted;       // why the server will take nothing (PushOutcome::Halt), in short
	Clock::time_point next_attempt{};
	std::mt19937 random{std::random_device{}()};
	// The request under way, when one is: since when, and whether its wait was said.
	std::optional<Clock::time_point> sent_at;
	bool wait_said = false;
};

std::optional<std::string> Pusher::waiting_line(State &s, size_t waiting) const
{
	// Said by the push() of a later window, or by finish(), once a request.
	if (!s.sent_at || s.wait_said ||
	    std::chrono::duration<double>(Clock::now() - *s.sent_at).count() < config_.wait_said_s)
		return std::nullopt;
	s.wait_said = true;
	const long long seconds = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - *s.sent_at).count();
	return "no answer from " + where_ + " for " + std::to_string(seconds) + " s; sampling goes on (" +
	       std::to_string(waiting) + (waiting == 1 ? " window" : " windows") + " waiting, the request given up after " +
	       std::to_string(std::llround(config_.request_timeout_s)) + " s)";
}

Pusher::Pusher(PushConfig config, std::unique_ptr<PushTransport> transport)
	: config_(std::move(config)), where_(url_for_humans(config_.url)), transport_(std::move(transport))
{
	assert(config_.format != PushFormat::Auto && "resolve_push_target first");
	if (!transport_)
		transport_ = make_curl_transport(config_);
	state_ = std::make_unique<State>(config_);
	worker_ = std::thread(&Pusher::run, this);
}

Pusher::~Pusher()
{
	finish(0);
}

void Pusher::log(const std::string &line) const
{
	if (config_.log)
		config_.log("profile: push: " + line);
	else
		diagnostics::say("push: %s", line.c_str());
}

void Pusher::push(PushWindow window)
{
	std::vector<std::string> lines;
	{
		std::lock_guard lock(mutex_);
		State &s = *state_;
		if (s.finished) {
			s.stats.dropped++;
			s.stats.dropped_bytes += window.profile.bytes.size();
			lines.push_back("window " + describe_window(window) + " came after the end: dropped");
		} else {
			if (std::optional<std::string> waiting = waiting_line(s, s.queue.count() + 1))
				lines.push_back(*waiting);
			for (const PushWindow &old : s.queue.push(std::move(window))) {
				s.stats.dropped++;
				s.stats.dropped_bytes += old.profile.bytes.size();
				s.stats.refused += !s.halted.empty();
				lines.push_back("queue full (--push-queue " + std::to_string(config_.queue_windows) +
						", --push-queue-bytes " + size_text(config_.queue_bytes) +
						"): dropped window " + describe_window(old));
			}
			wake_.notify_one();
		}
	}
	for (const std::string &line : lines)
		log(line);
}

void Pusher::finish(double seconds)
{
	std::unique_lock lock(mutex_);
	State &s = *state_;
	if (s.finished)
		return;
	s.finished = true;
	if (std::optional<std::string> waiting = waiting_line(s, s.queue.count())) {
		lock.unlock();
		log(*waiting);
		lock.lock();
	}
	// One attempt now, whatever the backoff said: this is the last chance.
	s.next_attempt = Clock::now();
	wake_.notify_all();
	const auto in = [](double seconds) {
		return Clock::now() + std::chrono::duration_cast<Clock::duration>(
					      std::chrono::duration<double>(std::max(seconds, 0.0)));
	};
	const auto deadline = in(seconds);
	const auto settled = [&] { return s.queue.count() == 0 || !s.halted.empty(); };
	// A server that takes nothing (down, or slow) holds the end up to `seconds`: said 2 s
	// into the wait (sooner when a request's wait is said sooner), so that a quiet end is
	// never taken for a hang.
	const auto said_at = std::min(deadline, in(std::min(config_.wait_said_s, 2.0)));
	if (!settled_.wait_until(lock, said_at, settled) && said_at < deadline) {
		const size_t waiting = s.queue.count();
		lock.unlock();
		log(std::to_string(waiting) + (waiting == 1 ? " window" : " windows") + " not delivered to " + where_ +
		    " yet: trying until " + std::to_string(std::llround(seconds)) +
		    " s after the end (a stop signal ends it now)");
		lock.lock();
	}
	settled_.wait_until(lock, deadline, settled);
	s.stopping = true;
	wake_.notify_all();
	lock.unlock();
	transport_->stop();
	if (worker_.joinable())
		worker_.join();
	lock.lock();
	auto [windows, bytes] = s.queue.clear();
	s.stats.dropped += windows;
	s.stats.dropped_bytes += bytes;
	const std::string halted = s.halted;
	if (!halted.empty())
		s.stats.refused += windows;
	lock.unlock();
	if (windows)
		log(std::to_string(windows) + (windows == 1 ? " window" : " windows") + " (" + size_text(bytes) +
		    ") not delivered to " + where_ + (halted.empty() ? " by the end" : " (" + halted + ")") +
		    ": dropped");
}

Pusher::Stats Pusher::stats() const
{
	std::lock_guard lock(mutex_);
	Stats stats = state_->stats;
	stats.queued = state_->queue.count();
	stats.queued_bytes = state_->queue.bytes();
	return stats;
}

void Pusher::run()
{
	State &s = *state_;
	std::unique_lock lock(mutex_);
	while (!s.stopping) {
		if (!s.queue.waiting() || !s.halted.empty()) {
			wake_.wait(lock);
			continue;
		}
		if (Clock::now() < s.next_attempt) {
			wake_.wait_until(lock, s.next_attempt);
			continue;
		}
		PushWindow window = s.queue.take();
		s.sent_at = Clock::now();
		s.wait_said = false;
		lock.unlock();

		const PushRequest request = build_push_request(config_, window);
		const auto start = Clock::now();
		const Result<PushResponse> response = transport_->send(request);
		const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
		const PushVerdict verdict = judge_push_response(config_.format, response);

		std::vector<std::string> lines;
		lock.lock();
		s.sent_at.reset();
		s.stats.attempts++;
		s.stats.last_ms = ms;
		s.stats.max_ms = std::max(s.stats.max_ms, ms);
		s.stats.total_ms += ms;
		switch (verdict.outcome) {
		case PushOutcome::Delivered:
			s.queue.done();
			s.stats.sent++;
			if (!verdict.reason.empty()) // taken in part
				lines.push_back(where_ + " took window " + describe_window(window) + " in part: " +
						verdict.reason);
			if (s.streak)
				lines.push_back("delivered again after " + std::to_string(s.streak) +
						(s.streak == 1 ? " failed attempt" : " failed attempts") + " (" +
						std::to_string(s.queue.count()) + " more waiting)");
			s.streak = 0;
			break;
		case PushOutcome::Refused:
			s.queue.done();
			s.stats.failures++;
			s.stats.refused++;
			s.stats.dropped++;
			s.stats.dropped_bytes += window.profile.bytes.size();
			lines.push_back(where_ + " refused window " + describe_window(window) + ": " +
					verdict.reason + "; dropped");
			s.streak = 0;
			break;
		case PushOutcome::Retry: {
			s.stats.failures++;
			s.queue.put_back(std::move(window));
			if (s.stopping) // stopped under way: finish() counts what is left
				break;
			if (++s.streak == 1)
				lines.push_back("cannot deliver to " + where_ + ": " + verdict.reason +
						"; retrying with backoff (" + std::to_string(s.queue.count()) +
						(s.queue.count() == 1 ? " window" : " windows") + " waiting)");
			// The wait the server asked for (429, 503), within the backoff's bounds: a
			// Retry-After of hours would hold windows past the queue's room.
			const double unit = std::uniform_real_distribution<double>(0, 1)(s.random);
			const double delay = verdict.retry_after_s >= 0
						     ? std::clamp(verdict.retry_after_s, config_.backoff_min_s, config_.backoff_max_s)
						     : backoff_delay(config_, s.streak, unit);
			if (s.streak == 1 && verdict.retry_after_s >= 0)
				lines.back().insert(lines.back().size() - 1, "; the server asked for a wait of " +
										std::to_string(std::llround(verdict.retry_after_s)) + " s");
			s.next_attempt = Clock::now() + std::chrono::duration_cast<Clock::duration>(
								std::chrono::duration<double>(delay));
			break;
		}
		case PushOutcome::Halt:
			// Every later window would get the same answer: one line, no retries; what is
			// queued stays (within the queue's bounds) and is counted refused at the end.
			s.stats.failures++;
			s.queue.put_back(std::move(window));
			if (s.halted.empty()) {
				s.halted = verdict.reason.starts_with("the server refused the credentials")
						   ? "the server refused the credentials"
						   : "the server redirected elsewhere";
				lines.push_back(where_ + ": " + verdict.reason + "; no more windows are sent this run (" +
						std::to_string(s.queue.count()) + " waiting)");
			}
			break;
		}
		settled_.notify_all();
		if (!lines.empty()) {
			lock.unlock();
			for (const std::string &line : lines)
				log(line);
			lock.lock();
		}
	}
}
