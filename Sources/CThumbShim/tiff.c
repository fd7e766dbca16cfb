// libtiff over a buffer in memory or an open file (positioned reads), with its messages captured
// per handle (TIFFOpenOptions' handlers with user data, libtiff 4.5): one decode's errors never
// reach another thread's.
#include "CThumbShim.h"

#include <errno.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

struct CThumb_TIFF {
    TIFF *tif;
    const uint8_t *bytes;    // the source in memory, or NULL when it is read from `descriptor`
    int descriptor;
    uint64_t count;
    uint64_t position;
    char error[CTHUMB_MESSAGE_CAPACITY];
    char warning[CTHUMB_MESSAGE_CAPACITY];
    int warningCount;
    TIFFRGBAImage rgba;
    int rgbaBegun;
    uint8_t *chunk;          // one decoded strip or tile (CThumb_TIFFReadRows)
    tmsize_t chunkCapacity;
};

static tmsize_t memoryRead(thandle_t handle, void *buffer, tmsize_t size) {
    struct CThumb_TIFF *tiff = (struct CThumb_TIFF *)handle;
    if (size <= 0 || tiff->position >= tiff->count) return 0;
    uint64_t available = tiff->count - tiff->position;
    uint64_t length = (uint64_t)size < available ? (uint64_t)size : available;
    if (tiff->bytes) {
        memcpy(buffer, tiff->bytes + tiff->position, (size_t)length);
    } else {
        // pread, retried on EINTR and on a short read; the file's length is what fstat said
        // when it was opened (`count`), so a read that meets its end early is a file that
        // shrank: the bytes not had are reported as not read, and libtiff says which strip.
        uint64_t done = 0;
        while (done < length) {
            ssize_t got = pread(tiff->descriptor, (uint8_t *)buffer + done, (size_t)(length - done),
                                (off_t)(tiff->position + done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            done += (uint64_t)got;
        }
        length = done;
    }
    tiff->position += length;
    return (tmsize_t)length;
}

// Read-only: the source is the caller's, and a decoder has nothing to write.
static tmsize_t memoryWrite(thandle_t handle, void *buffer, tmsize_t size) {
    (void)handle; (void)buffer; (void)size;
    return -1;
}

static toff_t memorySeek(thandle_t handle, toff_t offset, int whence) {
    struct CThumb_TIFF *tiff = (struct CThumb_TIFF *)handle;
    uint64_t base;
    switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = tiff->position; break;
    case SEEK_END: base = tiff->count; break;
    default: return (toff_t)-1;
    }
    // A file's offsets are 64-bit and unchecked: past the end is allowed (reads return 0 bytes
    // there), wrapping around is not.
    if (offset > UINT64_MAX - base) return (toff_t)-1;
    tiff->position = base + offset;
    return tiff->position;
}

static int memoryClose(thandle_t handle) { (void)handle; return 0; }

static toff_t memorySize(thandle_t handle) { return ((struct CThumb_TIFF *)handle)->count; }

// No mapping: libtiff then copies each raw strip into its own buffer and never points into
// (or, for bit-reversed data, rewrites) the caller's bytes.
static int memoryMap(thandle_t handle, void **base, toff_t *size) {
    (void)handle; (void)base; (void)size;
    return 0;
}

static void memoryUnmap(thandle_t handle, void *base, toff_t size) { (void)handle; (void)base; (void)size; }

static void formatMessage(char *into, const char *module, const char *format, va_list arguments) {
    char text[CTHUMB_MESSAGE_CAPACITY];
    vsnprintf(text, sizeof text, format, arguments);
    if (module && module[0]) {
        snprintf(into, CTHUMB_MESSAGE_CAPACITY, "%s: %s", module, text);
    } else {
        snprintf(into, CTHUMB_MESSAGE_CAPACITY, "%s", text);
    }
}

// The first error is kept: later ones ("Read error on strip 0") are usually its consequences.
static int onError(TIFF *tif, void *user, const char *module, const char *format, va_list arguments) {
    (void)tif;
    struct CThumb_TIFF *tiff = user;
    if (tiff->error[0] == 0) formatMessage(tiff->error, module, format, arguments);
    return 1; // handled: libtiff's global handler (stderr) is not called
}

static int onWarning(TIFF *tif, void *user, const char *module, const char *format, va_list arguments) {
    (void)tif;
    struct CThumb_TIFF *tiff = user;
    if (tiff->warningCount == 0) formatMessage(tiff->warning, module, format, arguments);
    if (tiff->warningCount < INT32_MAX) tiff->warningCount += 1;
    return 1;
}

CThumb_TIFF *CThumb_TIFFOpen(const uint8_t *bytes, int descriptor, uint64_t count, int64_t maxSingleAllocation,
                             char message[CTHUMB_MESSAGE_CAPACITY]) {
    message[0] = 0;
    struct CThumb_TIFF *tiff = calloc(1, sizeof *tiff);
    TIFFOpenOptions *options = TIFFOpenOptionsAlloc();
    if (!tiff || !options) {
        snprintf(message, CTHUMB_MESSAGE_CAPACITY, "out of memory opening the file");
        free(tiff);
        TIFFOpenOptionsFree(options);
        return NULL;
    }
    tiff->bytes = bytes;
    tiff->descriptor = descriptor;
    tiff->count = count;
    TIFFOpenOptionsSetMaxSingleMemAlloc(options, maxSingleAllocation > 0 ? (tmsize_t)maxSingleAllocation : 0);
    TIFFOpenOptionsSetErrorHandlerExtR(options, onError, tiff);
    TIFFOpenOptionsSetWarningHandlerExtR(options, onWarning, tiff);
    // "m": no memory mapping (see memoryMap).
    tiff->tif = TIFFClientOpenExt("source", "rm", (thandle_t)tiff, memoryRead, memoryWrite, memorySeek,
                                  memoryClose, memorySize, memoryMap, memoryUnmap, options);
    TIFFOpenOptionsFree(options);
    if (!tiff->tif) {
        snprintf(message, CTHUMB_MESSAGE_CAPACITY, "%s", tiff->error[0] ? tiff->error : "libtiff cannot open it");
        free(tiff);
        return NULL;
    }
    return tiff;
}

void CThumb_TIFFClose(CThumb_TIFF *tiff) {
    if (!tiff) return;
    if (tiff->rgbaBegun) TIFFRGBAImageEnd(&tiff->rgba);
    if (tiff->tif) TIFFClose(tiff->tif);
    free(tiff->chunk);
    free(tiff);
}

const char *CThumb_TIFFError(const CThumb_TIFF *tiff) { return tiff->error; }
const char *CThumb_TIFFWarning(const CThumb_TIFF *tiff) { return tiff->warning; }
int CThumb_TIFFWarningCount(const CThumb_TIFF *tiff) { return tiff->warningCount; }
void CThumb_TIFFClearMessages(CThumb_TIFF *tiff) {
    tiff->error[0] = 0;
    tiff->warning[0] = 0;
    tiff->warningCount = 0;
}

int CThumb_TIFFReadInfo(CThumb_TIFF *tiff, CThumb_TIFFInfo *info) {
    TIFF *tif = tiff->tif;
    memset(info, 0, sizeof *info);
    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &info->width) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &info->height)) {
        if (!tiff->error[0]) snprintf(tiff->error, sizeof tiff->error, "the directory has no ImageWidth or ImageLength");
        return -1;
    }
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &info->samplesPerPixel);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &info->bitsPerSample);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &info->sampleFormat);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &info->compression);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &info->planarConfig);
    TIFFGetFieldDefaulted(tif, TIFFTAG_ORIENTATION, &info->orientation);
    TIFFGetFieldDefaulted(tif, TIFFTAG_INKSET, &info->inkSet);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SUBFILETYPE, &info->subfileType);
    // No Photometric tag: libtiff's RGBA reader guesses from the samples; say "unknown" here.
    if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &info->photometric)) info->photometric = UINT16_MAX;
    uint16_t extraCount = 0;
    uint16_t *extra = NULL;
    if (TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &extraCount, &extra) && extra && extraCount > 0) {
        info->extraSampleCount = extraCount;
        info->firstExtraSample = extra[0];
    }
    info->isTiled = TIFFIsTiled(tif) ? 1 : 0;
    if (info->isTiled) {
        TIFFGetField(tif, TIFFTAG_TILEWIDTH, &info->tileWidth);
        TIFFGetField(tif, TIFFTAG_TILELENGTH, &info->tileLength);
        info->chunkCount = TIFFNumberOfTiles(tif);
        info->chunkBytes = TIFFTileSize64(tif);
    } else {
        TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &info->rowsPerStrip);
        info->chunkCount = TIFFNumberOfStrips(tif);
        info->chunkBytes = TIFFStripSize64(tif);
    }
    info->scanlineBytes = TIFFScanlineSize64(tif);
    uint16_t subIFDCount = 0;
    uint64_t *subIFDs = NULL;
    if (TIFFGetField(tif, TIFFTAG_SUBIFD, &subIFDCount, &subIFDs)) info->subIFDCount = subIFDCount;
    return 0;
}

static void endRGBA(CThumb_TIFF *tiff) {
    if (tiff->rgbaBegun) TIFFRGBAImageEnd(&tiff->rgba);
    tiff->rgbaBegun = 0;
}

int CThumb_TIFFSetDirectory(CThumb_TIFF *tiff, uint32_t index) {
    endRGBA(tiff);
    return TIFFSetDirectory(tiff->tif, (tdir_t)index) ? 0 : -1;
}

int CThumb_TIFFSetSubDirectory(CThumb_TIFF *tiff, uint64_t offset) {
    endRGBA(tiff);
    return TIFFSetSubDirectory(tiff->tif, offset) ? 0 : -1;
}

uint32_t CThumb_TIFFSubIFDOffsets(CThumb_TIFF *tiff, uint64_t *offsets, uint32_t capacity) {
    uint16_t count = 0;
    uint64_t *values = NULL;
    if (!TIFFGetField(tiff->tif, TIFFTAG_SUBIFD, &count, &values) || !values) return 0;
    for (uint32_t index = 0; index < count && index < capacity; index++) offsets[index] = values[index];
    return count;
}

uint32_t CThumb_TIFFICCProfile(CThumb_TIFF *tiff, const uint8_t **profile) {
    uint32_t length = 0;
    void *data = NULL;
    *profile = NULL;
    if (!TIFFGetField(tiff->tif, TIFFTAG_ICCPROFILE, &length, &data) || !data) return 0;
    *profile = data;
    return length;
}

int CThumb_TIFFRGBABegin(CThumb_TIFF *tiff, int *alpha) {
    char reason[1024];
    endRGBA(tiff);
    if (!TIFFRGBAImageOK(tiff->tif, reason) || !TIFFRGBAImageBegin(&tiff->rgba, tiff->tif, 0, reason)) {
        if (!tiff->error[0]) snprintf(tiff->error, sizeof tiff->error, "%s", reason);
        return -1;
    }
    tiff->rgbaBegun = 1;
    // Both set to top-left: libtiff applies no flips (it cannot transpose for 5-8 anyway), and
    // the caller turns the image after resampling, as it does with EXIF.
    tiff->rgba.req_orientation = ORIENTATION_TOPLEFT;
    tiff->rgba.orientation = ORIENTATION_TOPLEFT;
    *alpha = tiff->rgba.alpha;
    return 0;
}

int CThumb_TIFFRGBARows(CThumb_TIFF *tiff, uint32_t firstRow, uint32_t rowCount, uint32_t *raster) {
    if (!tiff->rgbaBegun || firstRow > tiff->rgba.height || rowCount > tiff->rgba.height - firstRow
        || firstRow > INT32_MAX) {
        return -1;
    }
    tiff->rgba.row_offset = (int)firstRow;
    tiff->rgba.col_offset = 0;
    return TIFFRGBAImageGet(&tiff->rgba, raster, tiff->rgba.width, rowCount) ? 0 : -1;
}

static int reserveChunk(CThumb_TIFF *tiff, tmsize_t size) {
    if (size <= 0) return -1;
    if (tiff->chunkCapacity >= size) return 0;
    uint8_t *chunk = realloc(tiff->chunk, (size_t)size);
    if (!chunk) {
        snprintf(tiff->error, sizeof tiff->error, "out of memory for a %lld-byte strip or tile", (long long)size);
        return -1;
    }
    tiff->chunk = chunk;
    tiff->chunkCapacity = size;
    return 0;
}

// A chunk libtiff could not decode is left as zeros and reported as an error.
static void decodeChunk(CThumb_TIFF *tiff, uint32_t index, tmsize_t size, int tiled) {
    tmsize_t got = tiled ? TIFFReadEncodedTile(tiff->tif, index, tiff->chunk, size)
                         : TIFFReadEncodedStrip(tiff->tif, index, tiff->chunk, size);
    if (got < 0) got = 0;
    if (got < size) memset(tiff->chunk + got, 0, (size_t)(size - got));
}

int CThumb_TIFFReadRows(CThumb_TIFF *tiff, uint32_t firstRow, uint32_t rowCount, uint8_t *output, size_t rowStride) {
    TIFF *tif = tiff->tif;
    uint32_t height = 0, width = 0;
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
    uint64_t rowBytes = TIFFScanlineSize64(tif);
    if (firstRow > height || rowCount > height - firstRow || rowBytes == 0 || rowBytes > rowStride || width == 0) return -1;
    if (TIFFIsTiled(tif)) {
        uint32_t tileWidth = 0, tileLength = 0;
        TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tileWidth);
        TIFFGetField(tif, TIFFTAG_TILELENGTH, &tileLength);
        tmsize_t tileBytes = TIFFTileSize(tif);
        uint64_t tileRowBytes = TIFFTileRowSize64(tif);
        if (tileWidth == 0 || tileLength == 0 || tileRowBytes == 0 || reserveChunk(tiff, tileBytes) != 0) return -1;
        // Bytes of one pixel: the caller only reads whole-byte samples here.
        uint64_t pixelBytes = tileRowBytes / tileWidth;
        for (uint32_t row = firstRow; row < firstRow + rowCount;) {
            uint32_t tileTop = row - row % tileLength;
            uint32_t last = tileTop + tileLength < firstRow + rowCount ? tileTop + tileLength : firstRow + rowCount;
            for (uint32_t x = 0; x < width; x += tileWidth) {
                decodeChunk(tiff, TIFFComputeTile(tif, x, tileTop, 0, 0), tileBytes, 1);
                uint64_t columns = width - x < tileWidth ? width - x : tileWidth;
                for (uint32_t y = row; y < last; y++) {
                    memcpy(output + (size_t)(y - firstRow) * rowStride + x * pixelBytes,
                           tiff->chunk + (size_t)(y - tileTop) * tileRowBytes, (size_t)(columns * pixelBytes));
                }
            }
            row = last;
        }
    } else {
        uint32_t rowsPerStrip = 0;
        TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rowsPerStrip);
        if (rowsPerStrip == 0 || rowsPerStrip > height) rowsPerStrip = height;
        tmsize_t stripBytes = TIFFStripSize(tif);
        if (reserveChunk(tiff, stripBytes) != 0) return -1;
        for (uint32_t row = firstRow; row < firstRow + rowCount;) {
            uint32_t stripTop = row - row % rowsPerStrip;
            uint32_t last = stripTop + rowsPerStrip < firstRow + rowCount ? stripTop + rowsPerStrip : firstRow + rowCount;
            decodeChunk(tiff, TIFFComputeStrip(tif, row, 0), stripBytes, 0);
            for (uint32_t y = row; y < last; y++) {
                memcpy(output + (size_t)(y - firstRow) * rowStride, tiff->chunk + (size_t)(y - stripTop) * rowBytes,
                       (size_t)rowBytes);
            }
            row = last;
        }
    }
    return 0;
}
