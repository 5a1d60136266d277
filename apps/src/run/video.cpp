// MP4 videos (and their GIF previews) through FFmpeg's libraries (see tdrl/apps/video.h):
// frames converted from RGB by libswscale, encoded by libavcodec, muxed by libavformat.

#include "tdrl/apps/video.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>

#include <tensordict/errors.h>

#ifdef TDRL_WITH_FFMPEG
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}
#endif

namespace tdrl::apps {

bool videos_available() {
#ifdef TDRL_WITH_FFMPEG
  return true;
#else
  return false;
#endif
}

std::string videos_unavailable_reason() {
  if (videos_available()) return {};
  return "this build of tdrl writes no videos (it was configured without FFmpeg's libraries); "
         "install libavcodec-dev libavformat-dev libswscale-dev (scripts/setup.sh does) and "
         "configure again";
}

#ifdef TDRL_WITH_FFMPEG

namespace {

std::string av_message(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  return text;
}

[[noreturn]] void fail(const std::string& path, const std::string& what, int code = 0) {
  throw std::runtime_error("video '" + path + "': " + what +
                           (code < 0 ? " (FFmpeg: " + av_message(code) + ")" : ""));
}

}  // namespace

// One encoding: MP4 (H.264 or MPEG-4, YUV 4:2:0) into a file, or an animated GIF (3-3-2 RGB)
// into memory, frames scaled to at most `max_width` pixels wide.
struct FfmpegEncoder {
  std::string path;     // named in messages
  std::string partial;  // the MP4's file until close(); empty for a GIF
  bool gif = false;
  int64_t max_width = 0;  // 0: the frames' width
  std::string bytes;      // the GIF once finished
  int64_t fps = 30;
  int64_t frames = 0;
  int64_t width = 0;  // of the frames given
  int64_t height = 0;
  bool closed = false;
  bool opened = false;  // the encoder and the file are ready
  AVFormatContext* format = nullptr;
  AVCodecContext* codec = nullptr;
  AVStream* stream = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  SwsContext* scaler = nullptr;

  ~FfmpegEncoder() { release(); }

  void release() {
    if (scaler) sws_freeContext(scaler);
    scaler = nullptr;
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&codec);
    if (format) {
      if (format->pb && gif) {
        uint8_t* buffer = nullptr;
        avio_close_dyn_buf(format->pb, &buffer);
        av_free(buffer);
        format->pb = nullptr;
      }
      if (format->pb) avio_closep(&format->pb);
      avformat_free_context(format);
      format = nullptr;
    }
  }

  // Opens the encoder and the output for frames of width x height.
  void open(int64_t w, int64_t h) {
    // FFmpeg's encoder statistics are not for tdrl's users; its errors reach them as exceptions.
    av_log_set_level(AV_LOG_ERROR);
    width = w;
    height = h;
    int rc = avformat_alloc_output_context2(&format, nullptr, gif ? "gif" : "mp4",
                                            gif ? nullptr : partial.c_str());
    if (rc < 0 || !format)
      fail(path, gif ? "cannot make a GIF" : "cannot make an MP4 container", rc);
    const AVCodec* encoder = nullptr;
    if (gif) {
      encoder = avcodec_find_encoder(AV_CODEC_ID_GIF);
      if (!encoder) fail(path, "FFmpeg has no gif encoder");
    } else {
      encoder = avcodec_find_encoder_by_name("libx264");
      if (!encoder) encoder = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
      if (!encoder) fail(path, "FFmpeg has neither the libx264 nor the mpeg4 encoder");
    }
    stream = avformat_new_stream(format, nullptr);
    codec = avcodec_alloc_context3(encoder);
    if (!stream || !codec) fail(path, "out of memory");
    int64_t out_w = w;
    int64_t out_h = h;
    if (max_width > 0 && w > max_width) {
      out_w = max_width;
      out_h = std::max<int64_t>(1, (h * max_width + w / 2) / w);
    }
    // YUV 4:2:0 needs even sizes; a GIF's palette pixels do not.
    codec->width = static_cast<int>(gif ? out_w : out_w + (out_w % 2));
    codec->height = static_cast<int>(gif ? out_h : out_h + (out_h % 2));
    codec->time_base = AVRational{1, static_cast<int>(fps)};
    codec->framerate = AVRational{static_cast<int>(fps), 1};
    codec->pix_fmt = gif ? AV_PIX_FMT_RGB8 : AV_PIX_FMT_YUV420P;
    codec->gop_size = static_cast<int>(fps);
    if (encoder->id == AV_CODEC_ID_MPEG4) codec->bit_rate = 4 * codec->width * codec->height;
    if (format->oformat->flags & AVFMT_GLOBALHEADER) codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (encoder->id == AV_CODEC_ID_H264) {
      av_opt_set(codec->priv_data, "preset", "veryfast", 0);
      av_opt_set(codec->priv_data, "crf", "20", 0);
    }
    if ((rc = avcodec_open2(codec, encoder, nullptr)) < 0)
      fail(path, std::string("cannot open the ") + encoder->name + " encoder", rc);
    if ((rc = avcodec_parameters_from_context(stream->codecpar, codec)) < 0)
      fail(path, "cannot set the stream's parameters", rc);
    stream->time_base = codec->time_base;
    stream->avg_frame_rate = codec->framerate;
    rc = gif ? avio_open_dyn_buf(&format->pb)
             : avio_open(&format->pb, partial.c_str(), AVIO_FLAG_WRITE);
    if (rc < 0)
      fail(path, gif ? "cannot open a memory buffer" : "cannot open '" + partial + "' for writing",
           rc);
    if ((rc = avformat_write_header(format, nullptr)) < 0)
      fail(path, "cannot write the header", rc);
    frame = av_frame_alloc();
    packet = av_packet_alloc();
    if (!frame || !packet) fail(path, "out of memory");
    frame->format = codec->pix_fmt;
    frame->width = codec->width;
    frame->height = codec->height;
    if ((rc = av_frame_get_buffer(frame, 0)) < 0) fail(path, "cannot allocate a frame", rc);
    scaler = sws_getContext(
        static_cast<int>(w), static_cast<int>(h), AV_PIX_FMT_RGB24, codec->width, codec->height,
        codec->pix_fmt, SWS_BICUBIC | (gif ? SWS_ERROR_DIFFUSION : 0), nullptr, nullptr, nullptr);
    if (!scaler)
      fail(path, gif ? "cannot convert RGB frames to GIF colours"
                     : "cannot convert RGB frames to YUV 4:2:0");
  }

  // Sends `f` (null: flush) to the encoder and writes the packets it returns.
  void encode(AVFrame* f) {
    int rc = avcodec_send_frame(codec, f);
    if (rc < 0) fail(path, "cannot encode a frame", rc);
    while ((rc = avcodec_receive_packet(codec, packet)) >= 0) {
      // Every frame lasts one tick: without a duration the muxer's edit list ends the video
      // at the last frame's start, and players drop that frame.
      packet->duration = 1;
      av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
      packet->stream_index = stream->index;
      rc = av_interleaved_write_frame(format, packet);
      if (rc < 0) fail(path, "cannot write a packet", rc);
    }
    if (rc != AVERROR(EAGAIN) && rc != AVERROR_EOF) fail(path, "the encoder failed", rc);
  }

  // Converts and encodes one checked uint8 [height, width, 3] frame.
  void write_frame(const torch::Tensor& rgb_frame) {
    const auto rgb = rgb_frame.to(torch::kCPU).contiguous();
    int rc = av_frame_make_writable(frame);
    if (rc < 0) fail(path, "cannot write into the frame", rc);
    const uint8_t* source[1] = {rgb.data_ptr<uint8_t>()};
    const int stride[1] = {static_cast<int>(width * 3)};
    sws_scale(scaler, source, stride, 0, static_cast<int>(height), frame->data, frame->linesize);
    frame->pts = frames;
    encode(frame);
    ++frames;
  }

  // Flushes the encoder and ends the container; a GIF's bytes are then in `bytes`.
  void finish() {
    encode(nullptr);
    const int rc = av_write_trailer(format);
    if (rc < 0) fail(path, "cannot write the trailer", rc);
    if (gif) {
      uint8_t* buffer = nullptr;
      const int size = avio_close_dyn_buf(format->pb, &buffer);
      format->pb = nullptr;
      bytes.assign(reinterpret_cast<const char*>(buffer), static_cast<size_t>(std::max(size, 0)));
      av_free(buffer);
    }
    release();
  }
};

struct VideoWriter::Impl : FfmpegEncoder {
  // The GIF preview (keep_preview), fed the first `preview_frames` frames.
  std::unique_ptr<FfmpegEncoder> preview;
  int64_t preview_frames = 0;
  std::string preview_bytes;
  int64_t preview_width = 0;
  int64_t preview_height = 0;
};

VideoWriter::VideoWriter(std::string path, int64_t fps) : impl_(std::make_unique<Impl>()) {
  TDRL_CHECK(fps >= 1 && fps <= 1000, tensordict::ValueError, "video '", path, "': fps is ", fps,
             "; it must be in [1, 1000]");
  impl_->path = std::move(path);
  impl_->partial = impl_->path + ".partial.mp4";
  impl_->fps = fps;
}

VideoWriter::~VideoWriter() {
  try {
    close();
  } catch (...) {
    // close() was not called: the error has nobody to go to; the partial file is removed.
    std::error_code ignored;
    std::filesystem::remove(impl_->partial, ignored);
  }
}

void VideoWriter::write(const torch::Tensor& frame) {
  auto& d = *impl_;
  TDRL_CHECK(!d.closed, tensordict::ValueError, "video '", d.path, "': write after close()");
  TDRL_CHECK(frame.scalar_type() == torch::kUInt8 && frame.dim() == 3 && frame.size(2) == 3,
             tensordict::ValueError, "video '", d.path,
             "': a frame is uint8 [H, W, 3] (one sub-env's render()); got ",
             std::string(c10::toString(frame.scalar_type())), " ",
             tensordict::shape_str(frame.sizes()));
  if (!d.opened) {
    TDRL_CHECK(frame.size(0) >= 1 && frame.size(1) >= 1, tensordict::ValueError, "video '", d.path,
               "': empty frame ", tensordict::shape_str(frame.sizes()));
    try {
      d.open(frame.size(1), frame.size(0));
    } catch (...) {
      // Nothing half-made stays behind: no encoder, no partial file; the writer is closed.
      d.release();
      std::error_code ignored;
      std::filesystem::remove(d.partial, ignored);
      d.closed = true;
      throw;
    }
    d.opened = true;
  }
  TDRL_CHECK(frame.size(0) == d.height && frame.size(1) == d.width, tensordict::ValueError,
             "video '", d.path, "': frame ", d.frames, " is ", frame.size(1), " x ", frame.size(0),
             " pixels; the video's frames are ", d.width, " x ", d.height);
  d.write_frame(frame);
  if (d.preview && d.preview->frames < d.preview_frames) {
    if (d.preview->frames == 0) d.preview->open(frame.size(1), frame.size(0));
    d.preview->write_frame(frame);
  }
}

void VideoWriter::close() {
  auto& d = *impl_;
  if (d.closed) return;
  d.closed = true;
  if (!d.opened) return;  // no frames: no file
  d.finish();
  if (d.preview && d.preview->frames > 0) {
    d.preview_width = d.preview->codec->width;
    d.preview_height = d.preview->codec->height;
    d.preview->finish();
    d.preview_bytes = std::move(d.preview->bytes);
  }
  d.preview.reset();
  std::error_code error;
  std::filesystem::rename(d.partial, d.path, error);
  if (error) fail(d.path, "cannot move '" + d.partial + "' there: " + error.message());
}

int64_t VideoWriter::frames() const { return impl_->frames; }

void VideoWriter::keep_preview(int64_t max_width, int64_t max_frames) {
  auto& d = *impl_;
  TDRL_CHECK(max_width >= 1 && max_frames >= 1, tensordict::ValueError, "video '", d.path,
             "': keep_preview(", max_width, ", ", max_frames, "): both must be at least 1");
  TDRL_CHECK(d.frames == 0 && !d.closed, tensordict::ValueError, "video '", d.path,
             "': keep_preview() comes before the first frame");
  d.preview = std::make_unique<FfmpegEncoder>();
  d.preview->path = d.path + " (GIF preview)";
  d.preview->gif = true;
  d.preview->max_width = max_width;
  d.preview->fps = d.fps;
  d.preview_frames = max_frames;
}

const std::string& VideoWriter::preview_gif() const { return impl_->preview_bytes; }
int64_t VideoWriter::preview_width() const { return impl_->preview_width; }
int64_t VideoWriter::preview_height() const { return impl_->preview_height; }

std::string VideoWriter::codec() const {
  return impl_->codec ? impl_->codec->codec->name : std::string();
}

VideoInfo probe_video(const std::string& path) {
  AVFormatContext* format = nullptr;
  int rc = avformat_open_input(&format, path.c_str(), nullptr, nullptr);
  if (rc < 0) fail(path, "cannot open", rc);
  struct Closer {
    AVFormatContext** format;
    AVCodecContext* codec = nullptr;
    AVPacket* packet = nullptr;
    AVFrame* frame = nullptr;
    ~Closer() {
      av_frame_free(&frame);
      av_packet_free(&packet);
      avcodec_free_context(&codec);
      avformat_close_input(format);
    }
  } closer{&format};
  if ((rc = avformat_find_stream_info(format, nullptr)) < 0) fail(path, "no stream info", rc);
  const AVCodec* decoder = nullptr;
  const int index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
  if (index < 0 || !decoder) fail(path, "no video stream", index);
  AVStream* stream = format->streams[index];
  closer.codec = avcodec_alloc_context3(decoder);
  closer.packet = av_packet_alloc();
  closer.frame = av_frame_alloc();
  if (!closer.codec || !closer.packet || !closer.frame) fail(path, "out of memory");
  avcodec_parameters_to_context(closer.codec, stream->codecpar);
  if ((rc = avcodec_open2(closer.codec, decoder, nullptr)) < 0) fail(path, "no decoder", rc);
  VideoInfo info;
  info.width = stream->codecpar->width;
  info.height = stream->codecpar->height;
  info.fps = av_q2d(stream->avg_frame_rate);
  info.codec = decoder->name;
  auto drain = [&] {
    while (avcodec_receive_frame(closer.codec, closer.frame) >= 0) ++info.frames;
  };
  while (av_read_frame(format, closer.packet) >= 0) {
    if (closer.packet->stream_index == index) {
      if ((rc = avcodec_send_packet(closer.codec, closer.packet)) < 0)
        fail(path, "cannot decode", rc);
      drain();
    }
    av_packet_unref(closer.packet);
  }
  avcodec_send_packet(closer.codec, nullptr);
  drain();
  return info;
}

#else  // no FFmpeg in this build

namespace {
[[noreturn]] void no_ffmpeg() { throw std::runtime_error("video: " + videos_unavailable_reason()); }
}  // namespace

struct VideoWriter::Impl {
  std::string none;
};
VideoWriter::VideoWriter(std::string, int64_t) { no_ffmpeg(); }
void VideoWriter::keep_preview(int64_t, int64_t) { no_ffmpeg(); }
const std::string& VideoWriter::preview_gif() const { return impl_->none; }
int64_t VideoWriter::preview_width() const { return 0; }
int64_t VideoWriter::preview_height() const { return 0; }
VideoWriter::~VideoWriter() = default;
void VideoWriter::write(const torch::Tensor&) { no_ffmpeg(); }
void VideoWriter::close() {}
int64_t VideoWriter::frames() const { return 0; }
std::string VideoWriter::codec() const { return {}; }
VideoInfo probe_video(const std::string&) { no_ffmpeg(); }

#endif

}  // namespace tdrl::apps
