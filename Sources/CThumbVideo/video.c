// FFmpeg's custom I/O for the video loader: positioned reads of the worker's descriptor, every
// other input refused, and its log kept off stderr. Everything else is Swift (VideoLoader).
#define _GNU_SOURCE
#include "CThumbVideo.h"
#include "CThumbFFmpeg.h"

#include <sys/mman.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/mem.h>
#include <libswscale/swscale.h>

// FFmpeg's functions, loaded by CThumb_FFmpegLoad (the callers load it before any of these).
#define FF (*CThumb_FFmpeg())

struct CThumbVideoInput {
    int descriptor;
    int64_t size;
    int64_t position;
    int64_t bytesRead;
    int64_t maxBytesRead;
    int budgetSpent;
    AVIOContext *io;
};

enum { CThumbVideoIOBufferBytes = 64 * 1024 };

static int readPacket(void *opaque, uint8_t *buffer, int capacity) {
    CThumbVideoInput *input = opaque;
    if (capacity <= 0) return 0;
    int64_t left = input->maxBytesRead - input->bytesRead;
    if (left <= 0) {
        input->budgetSpent = 1;
        return AVERROR_EOF;
    }
    if (input->position >= input->size) return AVERROR_EOF;
    int64_t wanted = capacity;
    if (wanted > left) wanted = left;
    if (wanted > input->size - input->position) wanted = input->size - input->position;
    ssize_t got;
    do {
        got = pread(input->descriptor, buffer, (size_t)wanted, (off_t)input->position);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return AVERROR(errno);
    if (got == 0) return AVERROR_EOF;
    input->position += got;
    input->bytesRead += got;
    return (int)got;
}

static int64_t seekInput(void *opaque, int64_t offset, int whence) {
    CThumbVideoInput *input = opaque;
    int64_t target;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return input->size;
    case SEEK_SET: target = offset; break;
    case SEEK_CUR:
        if (__builtin_add_overflow(input->position, offset, &target)) return AVERROR(EINVAL);
        break;
    case SEEK_END:
        if (__builtin_add_overflow(input->size, offset, &target)) return AVERROR(EINVAL);
        break;
    default: return AVERROR(EINVAL);
    }
    if (target < 0) return AVERROR(EINVAL);
    input->position = target;
    return target;
}

// Every URL a demuxer would open beside its input (a MOV's data reference, an HLS segment, a
// concat entry) is refused: the input is the one descriptor.
static int refuseOpen(struct AVFormatContext *context, AVIOContext **io, const char *url, int flags, AVDictionary **options) {
    (void)context; (void)io; (void)url; (void)flags; (void)options;
    return AVERROR(EPERM);
}

int CThumb_VideoOpen(int descriptor, int64_t size, int64_t maxBytesRead, const char *demuxer,
                     AVFormatContext **context, CThumbVideoInput **input, char *message, size_t messageSize) {
    *context = NULL;
    *input = NULL;
    if (messageSize > 0) message[0] = 0;
    const AVInputFormat *format = FF.av_find_input_format(demuxer);
    if (format == NULL) {
        snprintf(message, messageSize, "FFmpeg has no %s demuxer", demuxer);
        return AVERROR_DEMUXER_NOT_FOUND;
    }
    CThumbVideoInput *in = FF.av_mallocz(sizeof *in);
    uint8_t *buffer = FF.av_malloc(CThumbVideoIOBufferBytes);
    AVFormatContext *ctx = FF.avformat_alloc_context();
    if (in == NULL || buffer == NULL || ctx == NULL) {
        FF.av_free(in);
        FF.av_free(buffer);
        FF.avformat_free_context(ctx);
        return AVERROR(ENOMEM);
    }
    in->descriptor = descriptor;
    in->size = size;
    in->maxBytesRead = maxBytesRead;
    in->io = FF.avio_alloc_context(buffer, CThumbVideoIOBufferBytes, 0, in, readPacket, NULL, seekInput);
    if (in->io == NULL) {
        FF.av_free(buffer);
        FF.av_free(in);
        FF.avformat_free_context(ctx);
        return AVERROR(ENOMEM);
    }
    ctx->pb = in->io;
    ctx->io_open = refuseOpen;
    ctx->max_streams = 64;
    ctx->flags |= AVFMT_FLAG_CUSTOM_IO;
    int status = FF.avformat_open_input(&ctx, "", format, NULL);
    if (status < 0) {
        // avformat_open_input freed the context on failure; the I/O context is ours.
        CThumb_VideoTakeLastLogLine(message, messageSize);
        CThumb_VideoClose(NULL, in);
        return status;
    }
    *context = ctx;
    *input = in;
    return 0;
}

void CThumb_VideoClose(AVFormatContext *context, CThumbVideoInput *input) {
    if (context != NULL) FF.avformat_close_input(&context);
    if (input != NULL) {
        if (input->io != NULL) {
            FF.av_freep(&input->io->buffer);
            FF.avio_context_free(&input->io);
        }
        FF.av_free(input);
    }
}

int64_t CThumb_VideoBytesRead(const CThumbVideoInput *input) { return input->bytesRead; }
int CThumb_VideoReadBudgetSpent(const CThumbVideoInput *input) { return input->budgetSpent; }
int CThumb_AVErrorEOF(void) { return AVERROR_EOF; }
int CThumb_AVErrorAgain(void) { return AVERROR(EAGAIN); }

static _Thread_local char lastLogLine[256];

static void keepLastError(void *object, int level, const char *format, va_list arguments) {
    (void)object;
    if (level > AV_LOG_ERROR) return;
    vsnprintf(lastLogLine, sizeof lastLogLine, format, arguments);
    size_t length = strlen(lastLogLine);
    while (length > 0 && (lastLogLine[length - 1] == '\n' || lastLogLine[length - 1] == '\r')) lastLogLine[--length] = 0;
}

static pthread_once_t captureOnce = PTHREAD_ONCE_INIT;
static void installCapture(void) { FF.av_log_set_callback(keepLastError); }

void CThumb_VideoCaptureLog(void) { pthread_once(&captureOnce, installCapture); }

void CThumb_VideoTakeLastLogLine(char *line, size_t lineSize) {
    if (lineSize == 0) return;
    snprintf(line, lineSize, "%s", lastLogLine);
    lastLogLine[0] = 0;
}

int CThumb_VideoScaleFrame(struct SwsContext *scaler, const AVFrame *frame, uint8_t *destination, int destinationStride) {
    uint8_t *planes[4] = {destination, NULL, NULL, NULL};
    int strides[4] = {destinationStride, 0, 0, 0};
    return FF.sws_scale(scaler, (const uint8_t *const *)frame->data, frame->linesize, 0, frame->height, planes, strides);
}

int CThumb_VideoMemoryFile(void) { return memfd_create("thumbd-video", MFD_CLOEXEC); }
