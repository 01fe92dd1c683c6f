// syms/lru_cache.h: a map that keeps only its most recently used entries.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <utility>

template <typename Key, typename Value>
class LruCache {
public:
	explicit LruCache(size_t capacity = 1) : capacity_(std::max<size_t>(capacity, 1)) {}
	LruCache(const LruCache &) = delete; // the index points into this object's list
	LruCache &operator=(const LruCache &) = delete;

	// key's value, now the most recently used; null when it is not kept.
	Value *find(const Key &key)
	{
		auto it = index_.find(key);
		if (it == index_.end())
			return nullptr;
		order_.splice(order_.begin(), order_, it->second);
		return &it->second->second;
	}

	// Keeps value for key as the most recently used, in place of any it had, and drops the
	// least recently used past the capacity. The reference is good until the next insert.
	Value &insert(const Key &key, Value value)
	{
		if (auto it = index_.find(key); it != index_.end()) {
			order_.erase(it->second);
			index_.erase(it);
		}
		order_.emplace_front(key, std::move(value));
		index_.emplace(key, order_.begin());
		trim();
		return order_.front().second;
	}

	// Calls f(key, value) on every entry, without making any more recently used.
	template <typename F>
	void for_each(F f)
	{
		for (auto &[key, value] : order_)
			f(key, value);
	}

	// Drops the entries pred(key, value) is true of.
	template <typename Pred>
	void erase_if(Pred pred)
	{
		for (auto it = order_.begin(); it != order_.end();) {
			if (pred(it->first, it->second)) {
				index_.erase(it->first);
				it = order_.erase(it);
			} else {
				++it;
			}
		}
	}

	// Keeps only the `most` most recently used of the entries pred(key, value) is true of.
	template <typename Pred>
	void keep_newest(size_t most, Pred pred)
	{
		size_t seen = 0;
		for (auto it = order_.begin(); it != order_.end();) {
			if (pred(it->first, it->second) && ++seen > most) {
				index_.erase(it->first);
				it = order_.erase(it);
				dropped_++;
			} else {
				++it;
			}
		}
	}

	// Drops the least recently used entry and hands its value back; nullopt when empty.
	std::optional<Value> pop_oldest()
	{
		if (order_.empty())
			return std::nullopt;
		std::optional<Value> value(std::move(order_.back().second));
		index_.erase(order_.back().first);
		order_.pop_back();
		dropped_++;
		return value;
	}

	void set_capacity(size_t capacity)
	{
		capacity_ = std::max<size_t>(capacity, 1);
		trim();
	}
	size_t capacity() const { return capacity_; }
	size_t size() const { return order_.size(); }
	uint64_t dropped() const { return dropped_; } // entries dropped for room, over its life

private:
	void trim()
	{
		while (order_.size() > capacity_) {
			index_.erase(order_.back().first);
			order_.pop_back();
			dropped_++;
		}
	}

	size_t capacity_;
	uint64_t dropped_ = 0;
	std::list<std::pair<Key, Value>> order_; // most recently used first
	std::map<Key, typename std::list<std::pair<Key, Value>>::iterator> index_;
};
