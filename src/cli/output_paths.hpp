// SPDX-License-Identifier: MIT
// Output paths checked before the first step, so a typo costs seconds, never a run.
//
// Every program that writes a file at the end (a trace, an SVG, saved parameters) or
// during the run (checkpoints) calls these before it trains. Each check either passes,
// leaving nothing behind but a folder it was asked to create, or throws UsageError whose
// message names the flag, the path, what is wrong and what to do. Introduced in chapter 1.
#pragma once

#include <filesystem>
#include <string>

namespace towers {

/// Checks that the file `path` given to `flag` can be written later: its folder exists
/// and is writable (tested by creating and removing a probe file there), and `path` is
/// not a folder, nor a symbolic link to a file, a folder or nothing (outputs are never
/// written through a link; one to a device such as /dev/stdout is). An existing file is
/// not opened or changed. Empty `path`: nothing to do.
void check_output_file(const std::string& path, const std::string& flag);

/// Creates the folder `path` given to `flag`, with its parents, and checks that files can
/// be created in it. Throws UsageError when it is a file or cannot be created or written.
void prepare_output_folder(const std::filesystem::path& path, const std::string& flag);

}  // namespace towers
