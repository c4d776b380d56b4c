#pragma once
// How much memory one dsa-harness process may plan to hold. File shapes and generator options
// are checked against it before anything is allocated or read, so a small hostile file that
// declares huge datasets is refused at once instead of driving the process out of memory.
#include <cstdint>
#include <string>

namespace dsa {

// DSA_MEMORY_BUDGET (bytes, or a number with a K, M, G or T suffix, powers of 1024) when set,
// else half of the physical memory. Throws InputError naming DSA_MEMORY_BUDGET when it is not a
// positive size.
uint64_t memory_budget();

// "3.5 GiB", "12 KiB", "17 B": for messages.
std::string bytes_text(uint64_t bytes);

// "512M" -> 536870912; false when the text is not a positive size (or overflows).
bool parse_size(const std::string& text, uint64_t* bytes);

// Product of non-negative factors, saturating at UINT64_MAX (shapes of hostile files overflow).
uint64_t saturating_product(uint64_t a, uint64_t b);

}  // namespace dsa
