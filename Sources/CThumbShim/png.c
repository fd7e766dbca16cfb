// setjmp-guarded libpng phases: a row reader (so a non-interlaced image streams into the
// shrinker row by row) and a writer into a growable memory buffer.
#include "CThumbShim.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char message[CTHUMB_MESSAGE_CAPACITY];
    char firstWarning[CTHUMB_MESSAGE_CAPACITY];
    int warnings;
} CThumb_PNGMessages;

struct CThumb_PNGDecoder {
    size_t maxAllocationBytes; // per allocation by libpng; see CThumb_pngMalloc
    png_structp png;
    png_infop info;
    const uint8_t *data;
    size_t length;
    size_t offset;
    uint64_t interlacedRowReads; // png_read_row calls so far over all passes (interlaced reads)
    CThumb_PNGMessages messages;
};

static void CThumb_pngError(png_structp png, png_const_charp text) {
    CThumb_PNGMessages *messages = png_get_error_ptr(png);
    snprintf(messages->message, CTHUMB_MESSAGE_CAPACITY, "%s", text);
    png_longjmp(png, 1);
}

static void CThumb_pngWarning(png_structp png, png_const_charp text) {
    CThumb_PNGMessages *messages = png_get_error_ptr(png);
    if (messages->warnings == 0)
        snprintf(messages->firstWarning, CTHUMB_MESSAGE_CAPACITY, "%s", text);
    messages->warnings += 1;
}

static void CThumb_pngRead(png_structp png, png_bytep out, png_size_t count) {
    CThumb_PNGDecoder *decoder = png_get_io_ptr(png);
    if (count > decoder->length - decoder->offset) png_error(png, "Read Error: file is truncated");
    memcpy(out, decoder->data + decoder->offset, count);
    decoder->offset += count;
}

// libpng sizes some ancillary-chunk buffers from the declared length before reading them: a
// 57-byte file declaring a 1 GiB iTXt would get 1 GiB. No single allocation of a decode we
// want is larger than a few rows, so anything over the cap is refused (libpng then fails or
// drops the chunk with a warning).
static png_voidp CThumb_pngMalloc(png_structp png, png_alloc_size_t size) {
    const CThumb_PNGDecoder *decoder = png_get_mem_ptr(png);
    if (size > decoder->maxAllocationBytes) return NULL;
    return malloc(size);
}

static void CThumb_pngFree(png_structp png, png_voidp pointer) {
    (void)png;
    free(pointer);
}

// Chunks thumbd never uses: skipped unread rather than parsed (and allocated for).
static const png_byte CThumb_pngIgnoredChunks[] =
    "bKGD\0eXIf\0hIST\0iTXt\0oFFs\0pCAL\0pHYs\0sBIT\0sCAL\0sPLT\0sTER\0tEXt\0tIME\0zTXt";

CThumb_PNGDecoder *CThumb_PNGDecoderCreate(const uint8_t *data, size_t length, uint32_t maxWidth,
                                           uint32_t maxHeight, size_t maxChunkBytes) {
    CThumb_PNGDecoder *decoder = calloc(1, sizeof(CThumb_PNGDecoder));
    if (!decoder) return NULL;
    decoder->data = data;
    decoder->length = length;
    decoder->maxAllocationBytes = maxChunkBytes + (size_t)maxWidth * 8 * 2;
    decoder->png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &decoder->messages,
                                            CThumb_pngError, CThumb_pngWarning, decoder,
                                            CThumb_pngMalloc, CThumb_pngFree);
    if (!decoder->png) {
        free(decoder);
        return NULL;
    }
    decoder->info = png_create_info_struct(decoder->png);
    if (!decoder->info) {
        png_destroy_read_struct(&decoder->png, NULL, NULL);
        free(decoder);
        return NULL;
    }
    png_set_read_fn(decoder->png, decoder, CThumb_pngRead);
    png_set_user_limits(decoder->png, maxWidth, maxHeight);
    png_set_chunk_malloc_max(decoder->png, maxChunkBytes);
    png_set_keep_unknown_chunks(decoder->png, PNG_HANDLE_CHUNK_NEVER, CThumb_pngIgnoredChunks,
                                (int)(sizeof(CThumb_pngIgnoredChunks) / 5));
    return decoder;
}

void CThumb_PNGDecoderDestroy(CThumb_PNGDecoder *decoder) {
    if (!decoder) return;
    png_destroy_read_struct(&decoder->png, &decoder->info, NULL);
    free(decoder);
}

int CThumb_PNGReadInfo(CThumb_PNGDecoder *decoder, CThumb_PNGInfo *out) {
    if (setjmp(png_jmpbuf(decoder->png))) return -1;
    png_structp png = decoder->png;
    png_infop info = decoder->info;
    png_read_info(png, info);
    memset(out, 0, sizeof(*out));
    out->width = png_get_image_width(png, info);
    out->height = png_get_image_height(png, info);
    out->bitDepth = png_get_bit_depth(png, info);
    out->colorType = png_get_color_type(png, info);
    out->interlaced = png_get_interlace_type(png, info) != PNG_INTERLACE_NONE;
    out->hasTransparency = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    out->hasSRGB = png_get_valid(png, info, PNG_INFO_sRGB) != 0;
    double gamma = 0;
    if (png_get_valid(png, info, PNG_INFO_gAMA) && png_get_gAMA(png, info, &gamma) && gamma > 0) {
        out->hasGamma = 1;
        out->gamma = gamma;
    }
    png_charp name = NULL;
    int compression = 0;
    png_bytep profile = NULL;
    png_uint_32 profileLength = 0;
    if (png_get_valid(png, info, PNG_INFO_iCCP) &&
        png_get_iCCP(png, info, &name, &compression, &profile, &profileLength)) {
        out->iccProfile = profile;
        out->iccProfileLength = profileLength;
    }
    return 0;
}

int CThumb_PNGStart(CThumb_PNGDecoder *decoder, int applyGamma, int keep16, int *channels, int *passes) {
    if (setjmp(png_jmpbuf(decoder->png))) return -1;
    png_structp png = decoder->png;
    png_infop info = decoder->info;
    int colorType = png_get_color_type(png, info);
    int bitDepth = png_get_bit_depth(png, info);
    if (colorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (colorType == PNG_COLOR_TYPE_GRAY && bitDepth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (bitDepth == 16 && !keep16) png_set_scale_16(png);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // PNG stores 16-bit samples big-endian; the caller reads them as native integers.
    if (bitDepth == 16 && keep16) png_set_swap(png);
#endif
    if (colorType == PNG_COLOR_TYPE_GRAY || colorType == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(png);
    double gamma = 0;
    // Only a file that states its gamma is converted; without gAMA (or with sRGB) the samples
    // are taken as sRGB-encoded at any bit depth, as browsers show them.
    if (applyGamma && png_get_gAMA(png, info, &gamma) && gamma > 0)
        png_set_gamma(png, PNG_DEFAULT_sRGB, gamma);
    *passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    *channels = png_get_channels(png, info);
    int expectedDepth = (bitDepth == 16 && keep16) ? 16 : 8;
    if (png_get_bit_depth(png, info) != expectedDepth || (*channels != 3 && *channels != 4)) {
        snprintf(decoder->messages.message, CTHUMB_MESSAGE_CAPACITY,
                 "unexpected PNG layout after transforms (%d channels)", *channels);
        return -1;
    }
    return 0;
}

int CThumb_PNGReadRows(CThumb_PNGDecoder *decoder, uint8_t *rows, size_t rowStride, int count) {
    if (setjmp(png_jmpbuf(decoder->png))) return -1;
    for (int i = 0; i < count; i++) png_read_row(decoder->png, rows + (size_t)i * rowStride, NULL);
    return count;
}

// What png_read_image does, in slices: each pass reads every row of the image in order (libpng
// skips the rows a pass has no pixels in) and combines its pixels into the row in place, so the
// caller can check for cancellation between slices instead of once for all seven passes.
int CThumb_PNGReadInterlacedRows(CThumb_PNGDecoder *decoder, uint8_t *pixels, size_t rowStride,
                                 int count) {
    if (setjmp(png_jmpbuf(decoder->png))) return -1;
    uint32_t height = png_get_image_height(decoder->png, decoder->info);
    if (height == 0) return 0;
    for (int i = 0; i < count; i++) {
        uint32_t y = (uint32_t)(decoder->interlacedRowReads % height);
        png_read_row(decoder->png, pixels + (size_t)y * rowStride, NULL);
        decoder->interlacedRowReads += 1;
    }
    return count;
}

const char *CThumb_PNGErrorMessage(const CThumb_PNGDecoder *decoder) {
    return decoder->messages.message;
}

int CThumb_PNGWarningCount(const CThumb_PNGDecoder *decoder) { return decoder->messages.warnings; }

const char *CThumb_PNGFirstWarning(const CThumb_PNGDecoder *decoder) {
    return decoder->messages.firstWarning;
}

typedef struct {
    png_structp png;
    png_infop info;
    uint8_t *buffer;
    size_t length;
    size_t capacity;
    CThumb_PNGMessages messages;
    int cancelled;
} CThumb_PNGEncoder;

// Rows of input between two asks of the encoder's cancellation check (at least one row): zlib
// at level 6 takes ~1 ms for this much on the reference machine (a 144x144 RGBA avatar, 83 KB,
// takes ~10 ms whole).
enum { CThumb_pngEncodeBytesPerCancelCheck = 8192 };

static void CThumb_pngWrite(png_structp png, png_bytep data, png_size_t count) {
    CThumb_PNGEncoder *encoder = png_get_io_ptr(png);
    if (encoder->length + count > encoder->capacity) {
        size_t capacity = encoder->capacity ? encoder->capacity : 16384;
        while (capacity < encoder->length + count) capacity *= 2;
        uint8_t *grown = realloc(encoder->buffer, capacity);
        if (!grown) png_error(png, "out of memory");
        encoder->buffer = grown;
        encoder->capacity = capacity;
    }
    memcpy(encoder->buffer + encoder->length, data, count);
    encoder->length += count;
}

static void CThumb_pngFlush(png_structp png) { (void)png; }

int CThumb_PNGEncode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t rowStride,
                     int channels, int compressionLevel, CThumb_CancelCheck check,
                     void *checkContext, uint8_t **output, size_t *outputLength,
                     char message[CTHUMB_MESSAGE_CAPACITY]) {
    *output = NULL;
    *outputLength = 0;
    CThumb_PNGEncoder *encoder = calloc(1, sizeof(CThumb_PNGEncoder));
    if (!encoder) {
        snprintf(message, CTHUMB_MESSAGE_CAPACITY, "out of memory");
        return -1;
    }
    encoder->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &encoder->messages,
                                           CThumb_pngError, CThumb_pngWarning);
    if (encoder->png) encoder->info = png_create_info_struct(encoder->png);
    if (!encoder->png || !encoder->info) {
        png_destroy_write_struct(&encoder->png, NULL);
        free(encoder);
        snprintf(message, CTHUMB_MESSAGE_CAPACITY, "out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(encoder->png))) {
        int status = encoder->cancelled ? CTHUMB_CANCELLED : -1;
        snprintf(message, CTHUMB_MESSAGE_CAPACITY, "%s", encoder->messages.message);
        png_destroy_write_struct(&encoder->png, &encoder->info);
        free(encoder->buffer);
        free(encoder);
        return status;
    }
    png_set_write_fn(encoder->png, encoder, CThumb_pngWrite, CThumb_pngFlush);
    png_set_IHDR(encoder->png, encoder->info, width, height, 8,
                 channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(encoder->png, compressionLevel);
    png_write_info(encoder->png, encoder->info);
    size_t rowBytes = (size_t)width * (size_t)channels;
    uint32_t rowsPerCheck = rowBytes >= CThumb_pngEncodeBytesPerCancelCheck
                                ? 1 : (uint32_t)(CThumb_pngEncodeBytesPerCancelCheck / (rowBytes ? rowBytes : 1));
    for (uint32_t y = 0; y < height; y++) {
        if (check && y % rowsPerCheck == 0 && check(checkContext)) {
            encoder->cancelled = 1;
            png_error(encoder->png, "cancelled"); // longjmps to the cleanup above
        }
        png_write_row(encoder->png, (png_const_bytep)(pixels + (size_t)y * rowStride));
    }
    png_write_end(encoder->png, encoder->info);
    *output = encoder->buffer;
    *outputLength = encoder->length;
    png_destroy_write_struct(&encoder->png, &encoder->info);
    free(encoder);
    return 0;
}
