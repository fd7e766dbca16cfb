// CThumbShim: the only C code of thumbd.
//
// libjpeg and libpng report fatal errors by longjmp. Every setjmp lives in this file's
// implementation, in a C frame that is entered and left by each phase function below, so
// no Swift frame is ever jumped over. Every function returns 0 (or a count) on success and
// -1 on failure (CTHUMB_CANCELLED when a cancellation check stopped it), with the library's
// message kept in the decoder for the caller to read.
// Symbols are prefixed CThumb_. Swift code imports this module only inside ThumbImaging.
#ifndef CTHUMB_SHIM_H
#define CTHUMB_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define CTHUMB_MESSAGE_CAPACITY 200

/// What a phase returns when a cancellation check stopped it (distinct from -1, a decode error).
#define CTHUMB_CANCELLED (-2)

/// A cancellation request, asked from C in the middle of a library call: returns nonzero to
/// stop. It must return normally (never longjmp, never throw): the shim itself then abandons
/// the phase by longjmp over the library's C frames, after the check's own frame is gone.
typedef int (*CThumb_CancelCheck)(void *context);

// MARK: - JPEG decoding

typedef struct CThumb_JPEGDecoder CThumb_JPEGDecoder;

/// Colour space of the JPEG file (not of the decoded output).
typedef enum {
    CThumb_JPEGColorGray = 1,
    CThumb_JPEGColorYCbCr = 2,
    CThumb_JPEGColorRGB = 3,
    CThumb_JPEGColorCMYK = 4,
    CThumb_JPEGColorYCCK = 5,
    CThumb_JPEGColorOther = 0,
} CThumb_JPEGColor;

typedef struct {
    uint32_t width;          ///< stored width, pixels
    uint32_t height;         ///< stored height, pixels
    int components;
    CThumb_JPEGColor colorSpace;
    int sawAdobeMarker;      ///< Adobe APP14 present: CMYK samples are stored inverted
    int progressive;
    int arithmetic;
    const uint8_t *exif;     ///< APP1 "Exif\0\0" payload (TIFF header onwards), or NULL
    size_t exifLength;
} CThumb_JPEGHeader;

/// Creates a decoder over `data` (borrowed: it must outlive the decoder).
/// `maxScans` caps progressive scans; `maxMemoryBytes` caps libjpeg's working memory.
CThumb_JPEGDecoder *CThumb_JPEGDecoderCreate(const uint8_t *data, size_t length, int maxScans,
                                             long maxMemoryBytes);
void CThumb_JPEGDecoderDestroy(CThumb_JPEGDecoder *decoder);
/// Installs `check` (with `context`, borrowed: it must outlive the decoder's use), asked by
/// libjpeg's progress monitor while a progressive file's scans are consumed in CThumb_JPEGStart
/// and while rows are read (rate-limited by work done; the first monitor call always asks).
/// When it returns nonzero, that phase and every later one return CTHUMB_CANCELLED; the decoder
/// is then only good for CThumb_JPEGDecoderDestroy.
void CThumb_JPEGDecoderSetCancelCheck(CThumb_JPEGDecoder *decoder, CThumb_CancelCheck check,
                                      void *context);
int CThumb_JPEGReadHeader(CThumb_JPEGDecoder *decoder, CThumb_JPEGHeader *header);
/// Copies the ICC profile (APP2 chunks reassembled) into a malloc'd buffer; free with CThumb_Free.
/// Returns 1 with a profile, 0 without one, -1 on error.
int CThumb_JPEGCopyICCProfile(CThumb_JPEGDecoder *decoder, uint8_t **profile, unsigned int *length);
/// Starts decompression at scale 1/`scaleDenominator` (1, 2, 4 or 8). Output is RGB for
/// gray, YCbCr and RGB files (3 bytes a pixel) and CMYK for CMYK and YCCK files (4 bytes).
/// Returns 0, -1 on error or CTHUMB_CANCELLED.
int CThumb_JPEGStart(CThumb_JPEGDecoder *decoder, int scaleDenominator, uint32_t *outputWidth,
                     uint32_t *outputHeight, int *outputComponents);
/// After CThumb_JPEGStart and before any row: decode only the output columns from `*firstColumn`,
/// `*width` of them (libjpeg-turbo's jpeg_crop_scanline, which widens them to whole iMCU columns
/// and writes back the columns it will decode); rows then hold `*width` pixels. The entropy
/// decoding is the same; the IDCT, upsampling and colour conversion of the other columns are
/// skipped. Returns 0, -1 (columns out of range) or CTHUMB_CANCELLED.
int CThumb_JPEGCropColumns(CThumb_JPEGDecoder *decoder, uint32_t *firstColumn, uint32_t *width);
/// Reads up to `maxRows` rows into `rows` (`rowStride` bytes apart). Returns rows read, -1 or
/// CTHUMB_CANCELLED.
int CThumb_JPEGReadRows(CThumb_JPEGDecoder *decoder, uint8_t *rows, size_t rowStride, int maxRows);
const char *CThumb_JPEGErrorMessage(const CThumb_JPEGDecoder *decoder);
/// Whether the error was libjpeg running out of memory (its own limit or malloc's).
int CThumb_JPEGErrorIsOutOfMemory(const CThumb_JPEGDecoder *decoder);
/// Number of corrupt-data warnings seen so far, and the first one's text.
int CThumb_JPEGWarningCount(const CThumb_JPEGDecoder *decoder);
const char *CThumb_JPEGFirstWarning(const CThumb_JPEGDecoder *decoder);
/// Scan selection (on by default): at a scale where some component's blocks decode to one pixel
/// (1/8), CThumb_JPEGStart hands libjpeg a progressive file without those components' AC scans
/// (see CThumb_JPEGKeepScans), which the 1x1 IDCT never reads: the same pixels from a fraction of
/// the entropy decoding. Call before CThumb_JPEGStart; 0 decodes every scan.
void CThumb_JPEGDecoderSetScanSelection(CThumb_JPEGDecoder *decoder, int enabled);
/// After CThumb_JPEGStart: bytes of the file libjpeg was not given (0: the file was decoded whole).
size_t CThumb_JPEGSkippedScanBytes(const CThumb_JPEGDecoder *decoder);
/// After CThumb_JPEGStart: scans libjpeg read (all of a progressive file's kept scans).
int CThumb_JPEGScansRead(const CThumb_JPEGDecoder *decoder);

// MARK: - Progressive JPEG scan selection

/// What CThumb_JPEGKeepScans made of a stream.
typedef struct {
    int scans;            ///< scans in the stream
    int keptScans;        ///< scans in the kept stream
    size_t keptBytes;     ///< length of the kept stream
    size_t headerBytes;   ///< where the first scan's entropy-coded data starts (alike in both streams)
    size_t skippedBytes;  ///< bytes of the stream's skipped scans (SOS segments and entropy-coded data)
} CThumb_JPEGScanSelection;

/// Copies a progressive Huffman (SOF2) stream without the AC scans of the components that need
/// only their DC coefficients (bit i of `acComponents` set: the frame's i-th component needs its
/// AC scans) into a malloc'd buffer (free with CThumb_Free). Returns 1 with `*output` and
/// `*selection` set, or 0 when the stream is to be decoded whole: nothing to skip, more than
/// `maxScans` scans, or anything libjpeg could decode differently without the skipped scans
/// (a damaged or unparsable stream, a progression libjpeg warns about or leaves unfinished).
int CThumb_JPEGKeepScans(const uint8_t *data, size_t length, unsigned acComponents, int maxScans,
                         uint8_t **output, CThumb_JPEGScanSelection *selection);

// MARK: - JPEG encoding

/// Encodes 8-bit RGB (`components` 3) or gray (1) pixels, 4:2:0. On success `*output` is a
/// malloc'd buffer to free with CThumb_Free. On failure `message` holds the reason. `check`
/// (NULL: none) is asked every few KB of rows; when it says stop, returns CTHUMB_CANCELLED.
int CThumb_JPEGEncode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t rowStride,
                      int components, int quality, int progressive, int optimizeCoding,
                      CThumb_CancelCheck check, void *checkContext,
                      uint8_t **output, unsigned long *outputLength,
                      char message[CTHUMB_MESSAGE_CAPACITY]);

// MARK: - PNG decoding

typedef struct CThumb_PNGDecoder CThumb_PNGDecoder;

typedef struct {
    uint32_t width;
    uint32_t height;
    int bitDepth;
    int colorType;           ///< PNG_COLOR_TYPE_*
    int interlaced;
    int hasTransparency;     ///< tRNS chunk present
    int hasSRGB;
    int hasGamma;
    double gamma;            ///< file gamma from gAMA (e.g. 0.45455), when hasGamma
    const uint8_t *iccProfile; ///< iCCP payload owned by libpng, or NULL
    uint32_t iccProfileLength;
} CThumb_PNGInfo;

CThumb_PNGDecoder *CThumb_PNGDecoderCreate(const uint8_t *data, size_t length, uint32_t maxWidth,
                                           uint32_t maxHeight, size_t maxChunkBytes);
void CThumb_PNGDecoderDestroy(CThumb_PNGDecoder *decoder);
int CThumb_PNGReadInfo(CThumb_PNGDecoder *decoder, CThumb_PNGInfo *info);
/// Sets transforms to 8-bit RGB or RGBA (alpha when the image has it, tRNS included), or with
/// `keep16` a 16-bit image's samples as native 16-bit integers; converts gAMA-tagged data to
/// sRGB when `applyGamma`, and returns the channel count (3 or 4) and the number of interlace passes.
int CThumb_PNGStart(CThumb_PNGDecoder *decoder, int applyGamma, int keep16, int *channels, int *passes);
/// Non-interlaced images: reads the next `count` rows. Returns rows read or -1.
int CThumb_PNGReadRows(CThumb_PNGDecoder *decoder, uint8_t *rows, size_t rowStride, int count);
/// Interlaced images: the next `count` of the passes × height row reads (pass by pass, each
/// over rows 0..height-1), each combined into its row of `pixels` (the whole image, `rowStride`
/// apart). Returns `count` or -1.
int CThumb_PNGReadInterlacedRows(CThumb_PNGDecoder *decoder, uint8_t *pixels, size_t rowStride,
                                 int count);
const char *CThumb_PNGErrorMessage(const CThumb_PNGDecoder *decoder);
int CThumb_PNGWarningCount(const CThumb_PNGDecoder *decoder);
const char *CThumb_PNGFirstWarning(const CThumb_PNGDecoder *decoder);

// MARK: - PNG encoding

/// Encodes 8-bit RGB (`channels` 3) or RGBA (4). `*output` is malloc'd: free with CThumb_Free.
/// `check` as for CThumb_JPEGEncode (zlib at level 6 is the slow part of a thumbnail).
int CThumb_PNGEncode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t rowStride,
                     int channels, int compressionLevel, CThumb_CancelCheck check,
                     void *checkContext, uint8_t **output, size_t *outputLength,
                     char message[CTHUMB_MESSAGE_CAPACITY]);

// MARK: - Colour management (Little CMS)

typedef struct CThumb_ColorTransform CThumb_ColorTransform;

typedef enum {
    CThumb_PixelRGB8 = 0,
    CThumb_PixelRGBA8 = 1,
    CThumb_PixelCMYK8 = 2,          ///< C, M, Y, K with 255 = full ink
    CThumb_PixelCMYK8Inverted = 3,  ///< Adobe's inverted CMYK: 0 = full ink
    CThumb_PixelLab8 = 4,           ///< CIE L*a*b* (D50) in ICC's 8-bit encoding: a*, b* offset by 128
} CThumb_PixelLayout;

/// A transform from an embedded ICC profile to sRGB, output RGB8 (RGBA8 when the input is RGBA8,
/// alpha copied). Returns NULL when the profile is unusable or does not match the layout.
/// For CThumb_PixelLab8 the profile is not read (it may be empty): lcms's own Lab profile is.
CThumb_ColorTransform *CThumb_ColorTransformCreate(const uint8_t *profile, size_t length,
                                                   CThumb_PixelLayout input);
void CThumb_ColorTransformApply(CThumb_ColorTransform *transform, const uint8_t *input,
                                uint8_t *output, size_t pixelCount);
void CThumb_ColorTransformDestroy(CThumb_ColorTransform *transform);

/// The tone curve of an RGB profile built from coded colour parameters (HEIF/AVIF nclx).
typedef enum {
    CThumb_CurveSRGB = 0,   ///< IEC 61966-2-1 piecewise curve
    CThumb_CurveGamma = 1,  ///< a pure power law, `gamma` (1 = linear)
} CThumb_ToneCurve;

/// An ICC profile (v4, matrix/TRC) for RGB with the given CIE xy chromaticities of white and the
/// three primaries and one tone curve for all channels, serialised into a malloc'd buffer (free
/// with CThumb_Free). Returns 0, or -1 when lcms refuses the values (degenerate primaries).
int CThumb_ICCProfileFromPrimaries(const double white[2], const double red[2], const double green[2],
                                   const double blue[2], CThumb_ToneCurve curve, double gamma,
                                   uint8_t **profile, size_t *length);

void CThumb_Free(void *pointer);

#include "CThumbShim-TIFF.h"

#endif
