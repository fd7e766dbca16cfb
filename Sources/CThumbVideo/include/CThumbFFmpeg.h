#ifndef CTHUMB_FFMPEG_H
#define CTHUMB_FFMPEG_H

#include <stddef.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

/// Every FFmpeg function thumbd calls, by library: X(name) for each.
#define CTHUMB_FFMPEG_AVUTIL(X) X(av_display_rotation_get) X(av_frame_alloc) X(av_frame_free) X(av_frame_get_side_data) \
    X(av_frame_ref) X(av_free) X(av_freep) X(av_get_pix_fmt_name) X(av_log_set_callback) X(av_malloc) X(av_mallocz) \
    X(av_pix_fmt_desc_get) X(av_strerror)
#define CTHUMB_FFMPEG_AVCODEC(X) X(av_packet_alloc) X(av_packet_free) X(av_packet_unref) X(avcodec_alloc_context3) \
    X(avcodec_find_decoder) X(avcodec_flush_buffers) X(avcodec_free_context) X(avcodec_get_name) X(avcodec_open2) \
    X(avcodec_parameters_to_context) X(avcodec_receive_frame) X(avcodec_send_packet)
#define CTHUMB_FFMPEG_AVFORMAT(X) X(av_find_input_format) X(av_guess_sample_aspect_ratio) X(av_read_frame) X(av_seek_frame) \
    X(av_stream_get_side_data) X(avformat_alloc_context) X(avformat_close_input) X(avformat_free_context) \
    X(avformat_open_input) X(avio_alloc_context) X(avio_context_free)
#define CTHUMB_FFMPEG_SWSCALE(X) X(sws_getContext) X(sws_freeContext) X(sws_setColorspaceDetails) X(sws_getCoefficients) \
    X(sws_scale)

/// FFmpeg's functions, each of its own prototype's type (the headers' `__typeof__`: a signature
/// is never written twice), filled by `CThumb_FFmpegLoad`.
typedef struct CThumbFFmpegFunctions {
#define CTHUMB_FFMPEG_MEMBER(name) __typeof__(&name) name;
    CTHUMB_FFMPEG_AVUTIL(CTHUMB_FFMPEG_MEMBER)
    CTHUMB_FFMPEG_AVCODEC(CTHUMB_FFMPEG_MEMBER)
    CTHUMB_FFMPEG_AVFORMAT(CTHUMB_FFMPEG_MEMBER)
    CTHUMB_FFMPEG_SWSCALE(CTHUMB_FFMPEG_MEMBER)
#undef CTHUMB_FFMPEG_MEMBER
} CThumbFFmpegFunctions;

/// Loads libavutil, libavcodec, libavformat and libswscale of the major versions these headers
/// are (dlopen, RTLD_LOCAL) and resolves every function, once per process. 0 when they are
/// there; otherwise -1 with why in `message` (a library or a function missing), every time.
int CThumb_FFmpegLoad(char *message, size_t messageSize);

/// The functions; only after CThumb_FFmpegLoad returned 0 (else every member is NULL).
const CThumbFFmpegFunctions *CThumb_FFmpeg(void);

#endif
