#ifndef CTHUMB_VIDEO_H
#define CTHUMB_VIDEO_H

#include <stddef.h>
#include <stdint.h>

#include "CThumbFFmpeg.h"

struct AVFormatContext;

/// The bytes a demuxer reads: positioned reads (pread) of one descriptor, bounded in all.
typedef struct CThumbVideoInput CThumbVideoInput;

/// Opens the file on `descriptor` (`size` bytes) with FFmpeg's demuxer `demuxer` ("mov",
/// "matroska", "avi") over a custom AVIOContext: no probing of other demuxers, and no other
/// input is ever opened (io_open refuses every URL: no file:, no network, no dref, playlist or
/// concat indirection). Reads past `maxBytesRead` bytes in all end the input as at its end.
/// 0 on success; otherwise an AVERROR, with what FFmpeg said in `message`.
int CThumb_VideoOpen(int descriptor, int64_t size, int64_t maxBytesRead, const char *demuxer,
                     struct AVFormatContext **context, CThumbVideoInput **input, char *message, size_t messageSize);

/// Closes the demuxer and frees the input (either may be NULL).
void CThumb_VideoClose(struct AVFormatContext *context, CThumbVideoInput *input);

/// Bytes read so far, and whether a read was cut by the budget.
int64_t CThumb_VideoBytesRead(const CThumbVideoInput *input);
int CThumb_VideoReadBudgetSpent(const CThumbVideoInput *input);

/// AVERROR_EOF and AVERROR(EAGAIN): macros Swift does not import.
int CThumb_AVErrorEOF(void);
int CThumb_AVErrorAgain(void);

/// Routes FFmpeg's log to a per-thread "last error" line instead of stderr (the worker's stderr
/// is the daemon's log: a hostile file must not write lines there). Idempotent.
void CThumb_VideoCaptureLog(void);
/// The last error-level line FFmpeg logged on this thread ("" when none), and clears it.
void CThumb_VideoTakeLastLogLine(char *line, size_t lineSize);

/// An anonymous file (memfd, close-on-exec) for bytes held in memory; -1 with errno on failure.
int CThumb_VideoMemoryFile(void);

struct SwsContext;
struct AVFrame;
/// sws_scale of the whole of `frame` into one packed destination plane (`frame->data` and
/// `linesize` are arrays Swift sees as tuples).
int CThumb_VideoScaleFrame(struct SwsContext *scaler, const struct AVFrame *frame, uint8_t *destination, int destinationStride);

#endif
