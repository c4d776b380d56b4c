#pragma once
// The replay's inputs: the files and folders named on the command line, as batch files.
#include <cstdint>
#include <string>
#include <vector>

namespace dsa {

// The bundled fixtures folder (baked in at build time).
std::string default_fixtures_dir();

// Files and folders -> batch files, sorted; a folder contributes its *.h5 files (not its
// subfolders, so fixtures/golden/ is skipped). Throws InputError for a missing path. No
// arguments: the bundled fixtures (fixture_files(default_fixtures_dir())).
std::vector<std::string> expand_inputs(const std::vector<std::string>& args);

// The *.h5 files of a fixtures folder, sorted, each replaced by `dir`/recorded/<same name> when
// that file exists: the same batch carrying outputs recorded on a GPU (tools/record-gpu-fixture.sh),
// so a machine without one still replays GPU outputs.
std::vector<std::string> fixture_files(const std::string& dir);

// The size of a file in bytes (0 when it cannot be read): the unit of progress and of sharding.
uint64_t file_size(const std::string& path);

}  // namespace dsa
