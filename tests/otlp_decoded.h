// tests/otlp_decoded.h: an OTLP ExportProfilesServiceRequest read with the tests' own schema,
// written from opentelemetry-proto v1.10/v1.11's field numbers (not the writer's table, not
// a copied .proto), and checked whole as it is read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

struct OtlpRequest {
	// A KeyValueAndUnit of the dictionary; an attribute of a resource, as text.
	struct Attribute {
		uint64_t key = 0; // string index
		std::string text; // a string value, or an int one in decimal
		bool is_int = false;
	};
	struct Sample {
		uint64_t stack = 0, link = 0;
		std::vector<uint64_t> attributes, values;
		size_t timestamps = 0;
	};
	struct Profile {
		std::pair<uint64_t, uint64_t> sample_type, period_type; // string indices
		int64_t period = 0;
		uint64_t time = 0, duration = 0;
		std::vector<Sample> samples;
	};
	struct Resource {
		std::map<std::string, std::string> attributes;
		std::string scope_name, scope_version;
		std::vector<Profile> profiles;
	};
	struct Mapping {
		uint64_t start = 0, limit = 0, offset = 0, filename = 0;
		std::vector<uint64_t> attributes;
	};
	struct Line {
		uint64_t function = 0;
		int64_t line = 0;
	};
	struct Location {
		uint64_t mapping = 0, address = 0;
		std::vector<Line> lines;
		std::vector<uint64_t> attributes;
	};
	struct Function {
		uint64_t name = 0, system_name = 0, filename = 0;
	};

	std::vector<Resource> resources;
	std::vector<Mapping> mappings;
	std::vector<Location> locations;
	std::vector<Function> functions;
	std::vector<std::string> strings;
	std::vector<Attribute> attributes;
	std::vector<std::vector<uint64_t>> stacks;
	size_t links = 0;

	const std::string &str(uint64_t index) const;
	// key -> value of the attributes at these indices (each key once).
	std::map<std::string, std::string> attributes_of(const std::vector<uint64_t> &indices) const;
	// Function names of a sample, leaf first, inlined functions included.
	std::vector<std::string> frames(const Sample &sample) const;
	// Every sample as write_folded -E prints it: "thread.name-PID[@container];root;...;leaf"
	// -> its value, the process from the sample's attributes or its resource's.
	std::map<std::string, uint64_t> folded() const;
	uint64_t total() const;
};

// bytes decoded, every index checked in range, element 0 of every table its zero value,
// every table free of duplicates, each attribute list's keys unique. A broken message fails
// the test.
OtlpRequest decode_otlp(const std::string &bytes);
