// SPDX-License-Identifier: MIT
// Output paths checked before the first step, so a typo costs seconds, never a run.
//
// Every program that writes a file at the end (a trace, an SVG, saved parameters) or
// during the run (checkpoints) calls these before it trains. Each check either passes,
// leaving nothing behind but a folder it was asked to create, or throws UsageError whose
// message names the flag, the path, what is wrong and what to do. Introduced in chapter 1.
#pragma once

#include <cstdint>
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

/// Bytes an unprivileged process may still write in the file system of `folder`
/// (statvfs: f_bavail x f_frsize). Throws UsageError naming `flag` when it cannot be asked.
std::uintmax_t free_bytes(const std::filesystem::path& folder, const std::string& flag);

/// Refuses (UsageError) before a run starts when the folder `folder` given to `flag`
/// cannot hold `needed` more bytes, `what` (e.g. "one checkpoint"): the message names the
/// folder, the bytes needed and free, and what to do. A full disk found only at the first
/// save would lose the training the save was meant to keep.
void require_free_space(const std::filesystem::path& folder, std::uintmax_t needed,
                        const std::string& what, const std::string& flag);

}  // namespace towers
