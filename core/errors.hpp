#pragma once
// Errors that end in a one-line message and a distinct exit code, never a stack trace.
#include <stdexcept>
#include <string>

#include "core/exit_codes.hpp"

namespace dsa {

// Invalid input: names the file, the dataset (or attribute) and the broken rule. Exit 4.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string dataset, std::string rule)
      : std::runtime_error(file + ": " + dataset + ": " + rule),
        file_(std::move(file)), dataset_(std::move(dataset)), rule_(std::move(rule)) {}
  const std::string& file() const { return file_; }
  const std::string& dataset() const { return dataset_; }
  const std::string& rule() const { return rule_; }

 private:
  std::string file_, dataset_, rule_;
};

// Environment problems (no GPU for a named implementation, unwritable output folder...). Exit 4.
class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dsa
