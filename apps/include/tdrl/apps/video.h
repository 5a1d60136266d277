#pragma once

/// MP4 videos of env frames (evaluation episodes: `eval.video`, `tdrl-eval --video`), encoded
/// with Debian's FFmpeg libraries (libavcodec, libavformat, libswscale): H.264 through libx264
/// when the libraries have it, MPEG-4 part 2 otherwise.

#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

namespace tdrl::apps {

/// Whether this build writes videos (it was configured with the FFmpeg libraries); when false,
/// VideoWriter and probe_video throw std::runtime_error saying so, and `eval.video: true` is
/// refused at config load.
bool videos_available();
/// Why videos_available() is false, with what to install; empty when it is true.
std::string videos_unavailable_reason();

/// Writes RGB frames into an MP4 file. The file appears at `path` when close() succeeds (it is
/// written beside it first, so a failed or interrupted recording leaves no partial video at
/// `path`). Frames are uint8 `[H, W, 3]` (what EnvBase::render() returns for one sub-env), all
/// of the size of the first; an odd width or height is encoded one pixel larger (the YUV 4:2:0
/// format halves the chroma).
///
/// Throws tensordict::ValueError for fps < 1 and for a frame of another dtype, rank or size than
/// the first (naming both); std::runtime_error naming the path and FFmpeg's message when a file
/// cannot be written or encoded, or when the build has no FFmpeg. Not thread-safe.
/// Example:
/// ```
/// VideoWriter video("episode.mp4", 30);
/// for (...) video.write(env.render());
/// video.close();
/// ```
class VideoWriter {
 public:
  /// A video at `path` of `fps` frames per second; the encoder starts with the first frame.
  explicit VideoWriter(std::string path, int64_t fps = 30);
  /// Closes the video if close() was not called (errors are then swallowed: call close()).
  ~VideoWriter();
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  /// Appends one frame (uint8 `[H, W, 3]`, any device; copied). Throws as the class says.
  void write(const torch::Tensor& frame);
  /// Flushes the encoder and moves the file to `path`. A video without frames writes no file.
  /// Idempotent.
  void close();
  /// Frames written so far.
  int64_t frames() const;
  /// The encoder's name ("libx264" or "mpeg4"); empty before the first frame.
  std::string codec() const;

  /// Also encodes the first `max_frames` frames, scaled to at most `max_width` pixels wide, as
  /// an animated GIF in memory (what TensorBoard shows as a video: its image summaries animate
  /// GIFs), available after close(). Throws ValueError for a size or count below 1, or when
  /// frames were already written.
  void keep_preview(int64_t max_width, int64_t max_frames);
  /// The GIF's bytes after close() (empty without keep_preview or frames), and its size.
  const std::string& preview_gif() const;
  int64_t preview_width() const;
  int64_t preview_height() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// What a video file holds, by decoding all of it.
struct VideoInfo {
  int64_t frames = 0;
  int64_t width = 0;
  int64_t height = 0;
  double fps = 0;
  std::string codec;
};

/// Decodes the video at `path` and counts its frames. Throws std::runtime_error naming the path
/// and FFmpeg's message when it cannot be read, or when the build has no FFmpeg.
VideoInfo probe_video(const std::string& path);

}  // namespace tdrl::apps
