// libtiff through memory (no file access: the decode runs inside the worker's seccomp sandbox).
// libtiff reports errors through handlers with a va_list and reads its tags through variadic
// TIFFGetField, neither of which Swift can call: both live here. No setjmp: libtiff returns errors.
#ifndef CTHUMB_SHIM_TIFF_H
#define CTHUMB_SHIM_TIFF_H

#include <stddef.h>
#include <stdint.h>

typedef struct CThumb_TIFF CThumb_TIFF;

/// The tags of the current directory that decide how it is decoded and what it costs.
typedef struct {
    uint32_t width, height;
    uint16_t samplesPerPixel, bitsPerSample, sampleFormat, photometric;
    uint16_t compression, planarConfig, orientation, inkSet;
    uint16_t extraSampleCount, firstExtraSample;  ///< EXTRASAMPLE_* of the first extra sample
    uint32_t subfileType;                          ///< NewSubfileType: bit 0 = reduced resolution
    int isTiled;
    uint32_t tileWidth, tileLength, rowsPerStrip;
    uint64_t chunkBytes;    ///< one decoded tile or strip (TIFFTileSize64 / TIFFStripSize64), 0 when unknown
    uint64_t chunkCount;    ///< tiles or strips of the image
    uint64_t scanlineBytes; ///< one decoded row of samples (TIFFScanlineSize64)
    uint32_t subIFDCount;
} CThumb_TIFFInfo;

/// Opens `count` bytes at `bytes`, or when `bytes` is NULL the first `count` bytes of the file
/// open on `descriptor` (read with pread, the descriptor's offset untouched); either is kept
/// alive by the caller until Close. `maxSingleAllocation` bounds each of libtiff's own
/// allocations. NULL when libtiff refuses the header; `message` then says why.
CThumb_TIFF *CThumb_TIFFOpen(const uint8_t *bytes, int descriptor, uint64_t count, int64_t maxSingleAllocation,
                             char message[CTHUMB_MESSAGE_CAPACITY]);
void CThumb_TIFFClose(CThumb_TIFF *tiff);

/// libtiff's first error and first warning since the open ("" when none), and how many warnings.
const char *CThumb_TIFFError(const CThumb_TIFF *tiff);
const char *CThumb_TIFFWarning(const CThumb_TIFF *tiff);
int CThumb_TIFFWarningCount(const CThumb_TIFF *tiff);
/// Forgets the error and warnings so far: those of a directory looked at and not used, or of
/// tags, say nothing of the pixels decoded next.
void CThumb_TIFFClearMessages(CThumb_TIFF *tiff);

/// Reads the current directory's tags into `info`: 0, or -1 when a required one is missing.
int CThumb_TIFFReadInfo(CThumb_TIFF *tiff, CThumb_TIFFInfo *info);
/// Makes the `index`th directory of the main chain current: 0, or -1.
int CThumb_TIFFSetDirectory(CThumb_TIFF *tiff, uint32_t index);
/// Makes the directory at `offset` current (a SubIFD): 0, or -1.
int CThumb_TIFFSetSubDirectory(CThumb_TIFF *tiff, uint64_t offset);
/// Copies up to `capacity` SubIFD offsets of the current directory; returns how many it has.
uint32_t CThumb_TIFFSubIFDOffsets(CThumb_TIFF *tiff, uint64_t *offsets, uint32_t capacity);
/// The current directory's ICC profile (libtiff's memory: valid until the directory changes), or 0.
uint32_t CThumb_TIFFICCProfile(CThumb_TIFF *tiff, const uint8_t **profile);

/// libtiff's RGBA reader over the current directory, asked for stored (top-left) row order
/// with the Orientation tag left for the caller to apply. 0, or -1 (the error says why).
/// `alpha` gets TIFFRGBAImage's alpha kind (0 none, EXTRASAMPLE_ASSOCALPHA or _UNASSALPHA).
int CThumb_TIFFRGBABegin(CThumb_TIFF *tiff, int *alpha);
/// Rows [firstRow, firstRow + rowCount) as packed ABGR words, top row first. 0, or -1.
int CThumb_TIFFRGBARows(CThumb_TIFF *tiff, uint32_t firstRow, uint32_t rowCount, uint32_t *raster);

/// Rows [firstRow, firstRow + rowCount) of a contiguous (chunky) image's decoded samples,
/// `info.scanlineBytes` bytes each, `rowStride` apart. Each strip or tile is decoded once per
/// call: callers read whole strips or tile rows. 0, or -1.
int CThumb_TIFFReadRows(CThumb_TIFF *tiff, uint32_t firstRow, uint32_t rowCount, uint8_t *output,
                        size_t rowStride);

#endif
