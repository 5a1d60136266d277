#pragma once

/// Atomic, crash-consistent checkpoint folders of a run.
///
/// Errors: file-system failures throw std::runtime_error naming the path and the system's
/// reason; invalid arguments throw tensordict::ValueError (also a std::runtime_error).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tdrl::apps {

/// Checkpoints under `<run>/checkpoints/`: each in its own folder `ckpt-<frames>` (frames
/// zero-padded to 12 digits, so names sort by frames), written into `tmp-...` first, then
/// renamed, then recorded in the file `latest` (written atomically, holding the folder name
/// relative to dir()); older checkpoints beyond `keep` are removed after that. A crash at any
/// point leaves `latest` naming a complete checkpoint (or none).
///
/// Each checkpoint carries a manifest (`MANIFEST`: a format line, then one line per file, its
/// CRC-32 (zlib's), size and path) written after `fill`, so that a damaged file (truncated, flipped
/// bytes, deleted) is found before it is loaded: latest_intact() skips such a checkpoint, naming
/// the file, and takes the newest intact one.
///
/// Files written by `fill` and the folders are fsynced before the rename. Writing the frames
/// of an existing checkpoint replaces it (on Linux by an atomic exchange of the folders).
/// Stale `tmp-*` folders left by a crash are ignored by latest() and removed by the next
/// write(). One writer per folder (not thread- or process-safe).
/// Example: `CheckpointStore store(run.file("checkpoints"), 2);
///           store.write(frames, [&](const std::string& folder) { save_all(folder); });`
class CheckpointStore {
 public:
  /// `dir` is created by the first write(). Throws tensordict::ValueError when keep < 1.
  explicit CheckpointStore(std::string dir, int keep = 2);
  /// Creates the temporary folder, calls `fill(folder)` to write the files, and commits it.
  /// Returns the committed folder (`dir()/ckpt-<frames>`). When `fill` throws, the temporary
  /// folder is removed and the exception propagates (`latest` unchanged). Throws
  /// tensordict::ValueError when frames < 0, std::runtime_error naming the path when a folder
  /// cannot be created, synced or renamed.
  std::string write(int64_t frames, const std::function<void(const std::string&)>& fill);
  /// Writes the folder `dir()/<name>` the same way (temporary folder, MANIFEST, atomic
  /// replacement of the folder of that name), without touching `latest` or the ckpt-*
  /// folders: for a single named checkpoint such as `best`. Returns the folder. Throws
  /// tensordict::ValueError for a name that is empty, has a '/', or is one the store uses
  /// (ckpt-*, tmp-*, old-*, latest); otherwise as write().
  std::string write_named(const std::string& name,
                          const std::function<void(const std::string&)>& fill);
  /// The folder `latest` names (`dir()/<name>`), or nullopt when there is none (no `latest`
  /// file, an empty one, a name that is not a plain folder name, or a missing folder).
  std::optional<std::string> latest() const;

  /// What latest_intact() found: the folder to load, and why newer ones were passed over.
  struct Intact {
    std::string folder;
    std::vector<std::string> passed_over;  // "<folder>: <what is damaged>", newest first
  };
  /// The newest checkpoint whose files match its manifest: latest() first, then the other
  /// `ckpt-*` folders, newest first. The folder `latest` names is taken as intact without a
  /// manifest (written before release 0.2; until release 0.3); the others need one (a folder
  /// without it may be half removed). Returns nullopt when there is none; `why`
  /// (when given) then receives the reasons every candidate was passed over.
  std::optional<Intact> latest_intact(std::vector<std::string>* why = nullptr) const;
  /// Why `folder` does not match its manifest (naming the file: missing, of another size, or
  /// with other contents), or nullopt when it does (or has no manifest).
  static std::optional<std::string> damage(const std::string& folder);
  const std::string& dir() const { return dir_; }
  int keep() const { return keep_; }

 private:
  // Writes `fill`'s files into a temporary folder with their MANIFEST and renames it to
  // `dir()/<name>`, replacing a folder of that name atomically.
  void commit(const std::string& name, const std::function<void(const std::string&)>& fill) const;

  std::string dir_;
  int keep_;
};

}  // namespace tdrl::apps
