// base/handle.h: a C library's handle owned, ended by that library's own function.
#pragma once

#include <memory>

// Calls `end` on the pointer a unique_ptr lets go of: Handle<Elf, elf_end>.
template <auto end>
struct EndWith {
	template <typename T>
	void operator()(T *handle) const
	{
		end(handle);
	}
};

template <typename T, auto end>
using Handle = std::unique_ptr<T, EndWith<end>>;
