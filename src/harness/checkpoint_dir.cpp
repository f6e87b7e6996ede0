// SPDX-License-Identifier: MIT
#include "harness/checkpoint_dir.hpp"

#include <cstdio>
#include <regex>
#include <vector>

#include "cli/options.hpp"  // whole_number
#include "cli/output_paths.hpp"
#include "model/parameters.hpp"
#include "runtime/backend.hpp"  // towers::UsageError

namespace towers {
namespace fs = std::filesystem;

namespace {

// Every model.ckpt-STEP file in `dir` (any number of digits: a deleted run's files too).
std::vector<fs::path> checkpoint_files(const fs::path& dir) {
  static const std::regex pattern("model\\.ckpt-[0-9]+");
  std::vector<fs::path> files;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && std::regex_match(entry.path().filename().string(), pattern)) {
      files.push_back(entry.path());
    }
  }
  return files;
}

}  // namespace

void add_checkpoint_flags(CLI::App& app, CheckpointFlags& flags) {
  app.add_option("--checkpoint-dir", flags.dir,
                 "save model.ckpt-<step> here every --checkpoint-every steps, at the end and "
                 "on Ctrl-C (the folder is created if missing)");
  app.add_option_function<std::int64_t>(
         "--checkpoint-every",
         [&flags](const std::int64_t& every) {
           flags.every = every;
           flags.every_given = true;
         },
         "save a checkpoint whenever global_step is a multiple of N (needs --checkpoint-dir)")
      ->type_name("N")->default_str("1000")->check(whole_number(1, 1000000000));
  auto* resume = app.add_flag("--resume", flags.resume,
                              "continue from the newest checkpoint in --checkpoint-dir "
                              "(an error when there is none)");
  auto* if_present = app.add_flag("--resume-if-present", flags.resume_if_present,
                                  "like --resume, but start from scratch when there is no checkpoint");
  app.add_flag("--overwrite", flags.overwrite,
               "start afresh although --checkpoint-dir holds checkpoints: deletes them first")
      ->excludes(resume)->excludes(if_present);
}

CheckpointDir::CheckpointDir(const CheckpointFlags& flags) : dir_(flags.dir), every_(flags.every) {
  const bool resume = flags.resume || flags.resume_if_present;
  if (dir_.empty()) {
    if (flags.every_given) throw UsageError("--checkpoint-every needs --checkpoint-dir.");
    if (resume) throw UsageError(std::string(flags.resume ? "--resume" : "--resume-if-present") +
                                 " needs --checkpoint-dir.");
    if (flags.overwrite) throw UsageError("--overwrite needs --checkpoint-dir.");
    return;
  }
  std::error_code error;
  if (flags.resume && !fs::is_directory(dir_, error)) {
    throw UsageError("--resume: --checkpoint-dir " + dir_.string() +
                     " does not exist, so there is nothing to resume. Check the path, or use "
                     "--resume-if-present to start from scratch when there is no checkpoint.");
  }
  prepare_output_folder(dir_, "--checkpoint-dir");
  // Before anything in the folder is read or removed: another run's files are its own.
  lock_ = std::make_unique<FolderLock>(dir_, "--checkpoint-dir");
  for (const fs::path& stale : model::remove_stale_temporary_files(dir_)) {
    std::printf("removed %s, left by an interrupted save\n", stale.string().c_str());
  }
  find_or_clear(flags);
  // Last, after --overwrite freed what it deleted: room for one more save, now rather
  // than at the first save, after the training it was meant to keep.
  require_free_space(dir_, model::checkpoint_file_size(flags.optimizer), "one checkpoint",
                     "--checkpoint-dir");
}

void CheckpointDir::find_or_clear(const CheckpointFlags& flags) {
  const bool resume = flags.resume || flags.resume_if_present;
  std::error_code error;
  const std::optional<fs::path> latest = model::latest_checkpoint(dir_);
  if (resume) {
    if (!latest) {
      if (flags.resume_if_present) {
        std::printf("no checkpoint in %s: starting from scratch\n", dir_.string().c_str());
        return;
      }
      throw UsageError("--resume: --checkpoint-dir " + dir_.string() +
                       " holds no model.ckpt-<step> file. Check the path, or use "
                       "--resume-if-present to start from scratch when there is none.");
    }
    resumed_ = model::load_checkpoint(*latest);
    resumed_from_ = *latest;
    if (latest->filename() != model::checkpoint_name(resumed_->global_step)) {
      throw UsageError("--resume: " + latest->string() + " records global_step " +
                       std::to_string(resumed_->global_step) +
                       ", not the step in its name (renamed by hand?). Rename it to " +
                       model::checkpoint_name(resumed_->global_step) + " or remove it.");
    }
    require_same_optimizer(flags.optimizer);
    return;
  }
  const std::vector<fs::path> existing = checkpoint_files(dir_);
  if (existing.empty()) return;
  if (!flags.overwrite) {
    throw UsageError("--checkpoint-dir " + dir_.string() + " already holds " +
                     std::to_string(existing.size()) + " checkpoint(s)" +
                     (latest ? " (newest: " + latest->filename().string() + ")" : "") +
                     ", which a fresh run would overwrite. Pass --resume to continue from "
                     "them, --overwrite to delete them and start afresh, or choose another folder.");
  }
  for (const fs::path& file : existing) {
    fs::remove(file, error);
    if (error) {
      throw UsageError("--overwrite: cannot delete " + file.string() + " (" + error.message() + ")");
    }
    std::printf("--overwrite: deleted %s\n", file.string().c_str());
  }
}

void CheckpointDir::require_same_optimizer(model::Optimizer optimizer) const {
  // Momentum's velocity is no Adam moment, and SGD has neither: continuing a checkpoint
  // with another rule would start that rule's state from zero, or drop the one saved,
  // and the run would silently stop being the one that was interrupted.
  const model::Optimizer saved = resumed_->optimizer;
  if (saved == optimizer) return;
  // A --save-params file holds no optimizer's state, whatever rule trained it: say so,
  // rather than name an optimizer that never wrote it (its header says SGD's format).
  if (model::holds_parameters_only(*resumed_)) {
    throw UsageError("--resume: " + resumed_from_.string() + " is a --save-params file: it "
                     "holds the parameters only (no " +
                     (optimizer == model::Optimizer::kAdam ? "Adam moments"
                                                           : "momentum velocity") +
                     ", no moving averages of its own, no input position), so a run with "
                     "--optimizer " + model::optimizer_name(optimizer) + " cannot continue "
                     "from it. Resume from a model.ckpt-<step> that --checkpoint-dir saved, "
                     "or start afresh in another --checkpoint-dir.");
  }
  const auto state_of = [](model::Optimizer o) {
    return std::string(o == model::Optimizer::kAdam ? "Adam's two moments" : "momentum's velocity");
  };
  const std::string saved_name = model::optimizer_name(saved);
  const std::string why = model::optimizer_own_floats(optimizer) > 0
                              ? "it holds no " + state_of(optimizer)
                              : "its " + state_of(saved) + " would be dropped";
  throw UsageError("--resume: " + resumed_from_.string() + " was written with --optimizer " +
                   saved_name + " and this run trains with " + model::optimizer_name(optimizer) +
                   ": " + why + ", so the run would not continue the one that wrote it. "
                   "Resume with --optimizer " + saved_name +
                   (saved == model::Optimizer::kSgd ? "" : " (08_sharded or 11_mesh)") +
                   ", or start afresh in another --checkpoint-dir.");
}

CheckpointDir::~CheckpointDir() = default;

fs::path CheckpointDir::save(const model::TrainingState& state) const {
  return model::save_checkpoint(dir_, state);
}

std::string missing_input_note(const model::TrainingState& state, const std::string& file) {
  if (model::holds_parameters_only(state)) {
    return "note: " + file + " is a --save-params file, the parameters only: the moving "
           "averages start again from the parameters and the input at epoch 0 (a "
           "model.ckpt-<step> that --checkpoint-dir saved continues exactly)\n";
  }
  return "note: " + file + (state.format_version == 1 ? " (format 1)" : "") +
         " has no input position: the input starts again at epoch 0\n";
}

}  // namespace towers
