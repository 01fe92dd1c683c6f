// tests/test_sampler_kernel_checks.cpp: what the machine offers the sampler, read without loading anything.
#include <doctest/doctest.h>

#include "sampler/kernel_checks.h"

TEST_SUITE("unit") {

TEST_CASE("online CPU lists in the kernel's format")
{
	CHECK(parse_cpu_list("0-1\n") == std::vector<int>{0, 1});
	CHECK(parse_cpu_list("0") == std::vector<int>{0});
	CHECK(parse_cpu_list("0-2,4,6-7") == std::vector<int>{0, 1, 2, 4, 6, 7});
	CHECK(parse_cpu_list("").empty());
	CHECK(parse_cpu_list("3-1").empty());
	CHECK(parse_cpu_list("a").empty());
	CHECK(parse_cpu_list("1,").size() == 1);
}

TEST_CASE("a kernel without BTF is named as such")
{
	std::string message;
	try {
		check_kernel_support("/nonexistent/vmlinux");
	} catch (const RunError &e) {
		message = e.what();
	}
	CHECK(message.find("this kernel has no BTF (/nonexistent/vmlinux is missing)") == 0);
	CHECK_NOTHROW(check_kernel_support("/sys/kernel/btf/vmlinux"));
}

} // TEST_SUITE
