// tests/perf_records.h: side-band records as the kernel writes them (header, body, then the
// {pid, tid, time} trailer), made up for ProcessHistory::apply.
#pragma once

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// Builds one record: header, body bytes, then the {pid, tid, time} trailer, padded to 8.
class Record {
public:
	Record(uint32_t type, uint16_t misc = 0) : type_(type), misc_(misc) {}
	template <typename T>
	Record &add(T value)
	{
		const auto *p = reinterpret_cast<const uint8_t *>(&value);
		body_.insert(body_.end(), p, p + sizeof(T));
		return *this;
	}
	Record &text(const std::string &s)
	{
		body_.insert(body_.end(), s.begin(), s.end());
		do
			body_.push_back(0);
		while (body_.size() % 8);
		return *this;
	}
	std::vector<uint8_t> at(uint64_t time, uint32_t pid = 0) const
	{
		std::vector<uint8_t> out(sizeof(perf_event_header));
		out.insert(out.end(), body_.begin(), body_.end());
		struct {
			uint32_t pid, tid;
			uint64_t time;
		} id{pid, pid, time};
		const auto *p = reinterpret_cast<const uint8_t *>(&id);
		out.insert(out.end(), p, p + sizeof(id));
		perf_event_header header{type_, misc_, uint16_t(out.size())};
		std::memcpy(out.data(), &header, sizeof(header));
		return out;
	}

private:
	uint32_t type_;
	uint16_t misc_;
	std::vector<uint8_t> body_;
};

inline std::vector<uint8_t> mmap2(uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff, const std::string &path,
			   uint64_t time, uint32_t prot = PROT_READ | PROT_EXEC)
{
	return Record(PERF_RECORD_MMAP2)
		.add(pid).add(pid).add(addr).add(len).add(pgoff)
		.add(uint32_t(8)).add(uint32_t(1)).add(uint64_t(1234)).add(uint64_t(0))
		.add(prot).add(uint32_t(MAP_PRIVATE))
		.text(path)
		.at(time, pid);
}

inline std::vector<uint8_t> comm(uint32_t pid, const std::string &name, uint64_t time, bool exec)
{
	return Record(PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0).add(pid).add(pid).text(name).at(time, pid);
}

inline std::vector<uint8_t> task(uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid, uint64_t time)
{
	return Record(type).add(pid).add(ppid).add(tid).add(ppid).add(time).at(time, pid);
}

inline std::vector<uint8_t> ksymbol(uint64_t addr, uint32_t len, uint16_t flags, const std::string &name, uint64_t time,
				   uint16_t type = PERF_RECORD_KSYMBOL_TYPE_BPF)
{
	return Record(PERF_RECORD_KSYMBOL).add(addr).add(len).add(type).add(flags).text(name).at(time);
}
