// setjmp-guarded libjpeg phases. Each public function sets the jump target itself, calls
// into libjpeg, and returns; error_exit and the progress monitor longjmp back to that
// function's own frame only, over libjpeg's C frames and nothing else.
#include "CThumbShim.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char message[CTHUMB_MESSAGE_CAPACITY];
    char firstWarning[CTHUMB_MESSAGE_CAPACITY];
    int warnings;
} CThumb_JPEGError;

struct CThumb_JPEGDecoder {
    struct jpeg_decompress_struct info;
    CThumb_JPEGError error;
    struct jpeg_progress_mgr progress;
    int maxScans;
    int started;
    CThumb_CancelCheck cancelCheck; // NULL: never cancelled
    void *cancelContext;
    unsigned long cancelWorkMCUs;   // MCU rows' worth of MCUs consumed since the check was last asked
    int cancelled;                  // a phase was abandoned on the check's word: libjpeg's state is void
    const uint8_t *data;            // the file (borrowed)
    size_t length;
    int selectsScans;
    uint8_t *keptStream;            // what libjpeg reads after the header when scans were skipped
    size_t skippedScanBytes;
};

// A progressive file's scans are all consumed inside jpeg_start_decompress, and libjpeg calls the
// progress monitor once per iMCU row of each scan (a 1900x1263 photo: ~1,100 calls over ~32 ms,
// ~30 µs apart) and once per jpeg_read_scanlines call. Asking the check on every call would cost
// little for such a photo, but a tall narrow image gets a call every few blocks; so the check is
// asked once this many MCUs of work have gone by (the first call always asks): well under 1% of
// the decode, and a cancel is still seen within a fraction of a millisecond.
enum { CThumb_jpegMCUsPerCancelCheck = 64 };

static void CThumb_jpegErrorExit(j_common_ptr info) {
    CThumb_JPEGError *error = (CThumb_JPEGError *)info->err;
    (*info->err->format_message)(info, error->message);
    longjmp(error->jump, 1);
}

static void CThumb_jpegEmitMessage(j_common_ptr info, int level) {
    CThumb_JPEGError *error = (CThumb_JPEGError *)info->err;
    if (level >= 0) return; // trace messages
    if (error->warnings == 0) (*info->err->format_message)(info, error->firstWarning);
    error->warnings += 1;
    info->err->num_warnings += 1;
}

static void CThumb_jpegOutputMessage(j_common_ptr info) { (void)info; }

static void CThumb_jpegProgress(j_common_ptr common) {
    struct CThumb_JPEGDecoder *decoder = (struct CThumb_JPEGDecoder *)common;
    j_decompress_ptr info = (j_decompress_ptr)common;
    if (info->input_scan_number > decoder->maxScans) {
        snprintf(decoder->error.message, CTHUMB_MESSAGE_CAPACITY,
                 "too many progressive scans (more than %d)", decoder->maxScans);
        longjmp(decoder->error.jump, 1);
    }
    if (decoder->cancelCheck) {
        decoder->cancelWorkMCUs += info->MCUs_per_row > 0 ? info->MCUs_per_row : 1;
        if (decoder->cancelWorkMCUs >= CThumb_jpegMCUsPerCancelCheck) {
            decoder->cancelWorkMCUs = 0;
            // The check has returned before the jump: only libjpeg's frames and this one are left.
            if (decoder->cancelCheck(decoder->cancelContext)) {
                decoder->cancelled = 1;
                snprintf(decoder->error.message, CTHUMB_MESSAGE_CAPACITY, "cancelled");
                longjmp(decoder->error.jump, 1);
            }
        }
    }
}

static void CThumb_jpegInstallErrors(CThumb_JPEGError *error, struct jpeg_error_mgr **slot) {
    *slot = jpeg_std_error(&error->base);
    error->base.error_exit = CThumb_jpegErrorExit;
    error->base.emit_message = CThumb_jpegEmitMessage;
    error->base.output_message = CThumb_jpegOutputMessage;
    error->message[0] = 0;
    error->firstWarning[0] = 0;
    error->warnings = 0;
}

CThumb_JPEGDecoder *CThumb_JPEGDecoderCreate(const uint8_t *data, size_t length, int maxScans,
                                             long maxMemoryBytes) {
    CThumb_JPEGDecoder *decoder = calloc(1, sizeof(CThumb_JPEGDecoder));
    if (!decoder) return NULL;
    CThumb_jpegInstallErrors(&decoder->error, &decoder->info.err);
    if (setjmp(decoder->error.jump)) {
        jpeg_destroy_decompress(&decoder->info);
        free(decoder);
        return NULL;
    }
    jpeg_create_decompress(&decoder->info);
    decoder->maxScans = maxScans;
    decoder->progress.progress_monitor = CThumb_jpegProgress;
    decoder->info.progress = &decoder->progress;
    if (maxMemoryBytes > 0) decoder->info.mem->max_memory_to_use = maxMemoryBytes;
    decoder->data = data;
    decoder->length = length;
    decoder->selectsScans = 1;
    jpeg_mem_src(&decoder->info, data, (unsigned long)length);
    jpeg_save_markers(&decoder->info, JPEG_APP0 + 1, 0xFFFF);
    jpeg_save_markers(&decoder->info, JPEG_APP0 + 2, 0xFFFF);
    return decoder;
}

void CThumb_JPEGDecoderSetCancelCheck(CThumb_JPEGDecoder *decoder, CThumb_CancelCheck check,
                                      void *context) {
    decoder->cancelCheck = check;
    decoder->cancelContext = context;
    decoder->cancelWorkMCUs = CThumb_jpegMCUsPerCancelCheck; // the first monitor call asks
}

void CThumb_JPEGDecoderSetScanSelection(CThumb_JPEGDecoder *decoder, int enabled) {
    decoder->selectsScans = enabled;
}

void CThumb_JPEGDecoderDestroy(CThumb_JPEGDecoder *decoder) {
    if (!decoder) return;
    jpeg_destroy_decompress(&decoder->info);
    free(decoder->keptStream);
    free(decoder);
}

static CThumb_JPEGColor CThumb_jpegColor(J_COLOR_SPACE space) {
    switch (space) {
    case JCS_GRAYSCALE: return CThumb_JPEGColorGray;
    case JCS_YCbCr: return CThumb_JPEGColorYCbCr;
    case JCS_RGB: return CThumb_JPEGColorRGB;
    case JCS_CMYK: return CThumb_JPEGColorCMYK;
    case JCS_YCCK: return CThumb_JPEGColorYCCK;
    default: return CThumb_JPEGColorOther;
    }
}

int CThumb_JPEGReadHeader(CThumb_JPEGDecoder *decoder, CThumb_JPEGHeader *header) {
    if (setjmp(decoder->error.jump)) return -1;
    jpeg_read_header(&decoder->info, TRUE);
    struct jpeg_decompress_struct *info = &decoder->info;
    memset(header, 0, sizeof(*header));
    header->width = info->image_width;
    header->height = info->image_height;
    header->components = info->num_components;
    header->colorSpace = CThumb_jpegColor(info->jpeg_color_space);
    header->sawAdobeMarker = info->saw_Adobe_marker;
    header->progressive = info->progressive_mode;
    header->arithmetic = info->arith_code;
    for (jpeg_saved_marker_ptr marker = info->marker_list; marker; marker = marker->next) {
        if (marker->marker == JPEG_APP0 + 1 && marker->data_length > 6 &&
            memcmp(marker->data, "Exif\0\0", 6) == 0) {
            header->exif = marker->data + 6;
            header->exifLength = marker->data_length - 6;
            break;
        }
    }
    return 0;
}

int CThumb_JPEGCopyICCProfile(CThumb_JPEGDecoder *decoder, uint8_t **profile, unsigned int *length) {
    *profile = NULL;
    *length = 0;
    if (setjmp(decoder->error.jump)) return -1;
    JOCTET *data = NULL;
    unsigned int size = 0;
    if (!jpeg_read_icc_profile(&decoder->info, &data, &size)) return 0;
    *profile = data;
    *length = size;
    return 1;
}

// Called with the output scale set, before jpeg_start_decompress (whose setjmp covers it). A
// progressive file's scans are all consumed by jpeg_start_decompress; when some component's
// blocks decode to a single pixel, the memory source is pointed at the stream without that
// component's AC scans, from where libjpeg's header read stopped (the first scan's entropy-coded
// data, alike in both streams). The whole file's progression leaves every coefficient known, so
// libjpeg would not smooth blocks; without the skipped scans it would think them unknown and
// smooth (moving DC values too): smoothing is turned off to decode exactly what the file does.
static void CThumb_jpegSelectScans(CThumb_JPEGDecoder *decoder) {
    struct jpeg_decompress_struct *info = &decoder->info;
    if (!decoder->selectsScans || decoder->keptStream || !info->progressive_mode || info->arith_code) return;
    jpeg_calc_output_dimensions(info);
    unsigned acComponents = 0;
    int dcOnly = 0;
    for (int ci = 0; ci < info->num_components && ci < 32; ci++) {
        const jpeg_component_info *component = &info->comp_info[ci];
#if JPEG_LIB_VERSION >= 70
        int onePixel = component->DCT_h_scaled_size == 1 && component->DCT_v_scaled_size == 1;
#else
        int onePixel = component->DCT_scaled_size == 1;
#endif
        if (onePixel) dcOnly = 1;
        else acComponents |= 1u << ci;
    }
    if (!dcOnly) return;
    uint8_t *kept = NULL;
    CThumb_JPEGScanSelection selection;
    if (CThumb_JPEGKeepScans(decoder->data, decoder->length, acComponents, decoder->maxScans, &kept,
                             &selection) != 1) return;
    if (info->src->next_input_byte != decoder->data + selection.headerBytes ||
        info->src->bytes_in_buffer != decoder->length - selection.headerBytes) {
        free(kept); // libjpeg stopped elsewhere than the walk: leave the file whole
        return;
    }
    decoder->keptStream = kept;
    decoder->skippedScanBytes = selection.skippedBytes;
    jpeg_mem_src(info, kept + selection.headerBytes, (unsigned long)(selection.keptBytes - selection.headerBytes));
    info->do_block_smoothing = FALSE;
}

int CThumb_JPEGStart(CThumb_JPEGDecoder *decoder, int scaleDenominator, uint32_t *outputWidth,
                     uint32_t *outputHeight, int *outputComponents) {
    if (decoder->cancelled) return CTHUMB_CANCELLED;
    if (setjmp(decoder->error.jump)) return decoder->cancelled ? CTHUMB_CANCELLED : -1;
    struct jpeg_decompress_struct *info = &decoder->info;
    switch (info->jpeg_color_space) {
    case JCS_CMYK:
    case JCS_YCCK:
        info->out_color_space = JCS_CMYK;
        break;
    case JCS_GRAYSCALE:
    case JCS_YCbCr:
    case JCS_RGB:
        info->out_color_space = JCS_RGB;
        break;
    default:
        snprintf(decoder->error.message, CTHUMB_MESSAGE_CAPACITY,
                 "unsupported JPEG colour space with %d components", info->num_components);
        return -1;
    }
    info->scale_num = 1;
    info->scale_denom = (unsigned int)scaleDenominator;
    info->dct_method = JDCT_ISLOW;
    CThumb_jpegSelectScans(decoder);
    jpeg_start_decompress(info);
    decoder->started = 1;
    *outputWidth = info->output_width;
    *outputHeight = info->output_height;
    *outputComponents = info->output_components;
    return 0;
}

int CThumb_JPEGCropColumns(CThumb_JPEGDecoder *decoder, uint32_t *firstColumn, uint32_t *width) {
    if (decoder->cancelled) return CTHUMB_CANCELLED;
    if (setjmp(decoder->error.jump)) return decoder->cancelled ? CTHUMB_CANCELLED : -1;
    JDIMENSION first = *firstColumn, count = *width;
    jpeg_crop_scanline(&decoder->info, &first, &count);
    *firstColumn = first;
    *width = count;
    return 0;
}

int CThumb_JPEGReadRows(CThumb_JPEGDecoder *decoder, uint8_t *rows, size_t rowStride, int maxRows) {
    enum { batch = 16 };
    if (decoder->cancelled) return CTHUMB_CANCELLED;
    if (setjmp(decoder->error.jump)) return decoder->cancelled ? CTHUMB_CANCELLED : -1;
    struct jpeg_decompress_struct *info = &decoder->info;
    int done = 0;
    while (done < maxRows && info->output_scanline < info->output_height) {
        JSAMPROW pointers[batch];
        int want = maxRows - done < batch ? maxRows - done : batch;
        for (int i = 0; i < want; i++) pointers[i] = rows + (size_t)(done + i) * rowStride;
        JDIMENSION got = jpeg_read_scanlines(info, pointers, (JDIMENSION)want);
        if (got == 0) break; // suspension cannot happen with a memory source; be safe
        done += (int)got;
    }
    return done;
}

const char *CThumb_JPEGErrorMessage(const CThumb_JPEGDecoder *decoder) {
    return decoder->error.message;
}

int CThumb_JPEGErrorIsOutOfMemory(const CThumb_JPEGDecoder *decoder) {
    // libjpeg's last error code stays in msg_code: a failed allocation, or working memory past
    // max_memory_to_use (we have no backing store), is the image's size, not its damage.
    int code = decoder->error.base.msg_code;
    return code == JERR_OUT_OF_MEMORY || code == JERR_NO_BACKING_STORE;
}

int CThumb_JPEGWarningCount(const CThumb_JPEGDecoder *decoder) { return decoder->error.warnings; }

size_t CThumb_JPEGSkippedScanBytes(const CThumb_JPEGDecoder *decoder) { return decoder->skippedScanBytes; }

int CThumb_JPEGScansRead(const CThumb_JPEGDecoder *decoder) { return decoder->info.input_scan_number; }

const char *CThumb_JPEGFirstWarning(const CThumb_JPEGDecoder *decoder) {
    return decoder->error.firstWarning;
}

typedef struct {
    struct jpeg_compress_struct info;
    CThumb_JPEGError error;
    unsigned char *buffer;
    unsigned long length;
    int cancelled;
} CThumb_JPEGEncoder;

// Rows of input between two asks of an encoder's cancellation check (at least one row).
enum { CThumb_jpegEncodeBytesPerCancelCheck = 8192 };

int CThumb_JPEGEncode(const uint8_t *pixels, uint32_t width, uint32_t height, size_t rowStride,
                      int components, int quality, int progressive, int optimizeCoding,
                      CThumb_CancelCheck check, void *checkContext,
                      uint8_t **output, unsigned long *outputLength,
                      char message[CTHUMB_MESSAGE_CAPACITY]) {
    *output = NULL;
    *outputLength = 0;
    CThumb_JPEGEncoder *encoder = calloc(1, sizeof(CThumb_JPEGEncoder));
    if (!encoder) {
        snprintf(message, CTHUMB_MESSAGE_CAPACITY, "out of memory");
        return -1;
    }
    CThumb_jpegInstallErrors(&encoder->error, &encoder->info.err);
    if (setjmp(encoder->error.jump)) {
        int status = encoder->cancelled ? CTHUMB_CANCELLED : -1;
        snprintf(message, CTHUMB_MESSAGE_CAPACITY, "%s", encoder->error.message);
        jpeg_destroy_compress(&encoder->info);
        free(encoder->buffer);
        free(encoder);
        return status;
    }
    jpeg_create_compress(&encoder->info);
    jpeg_mem_dest(&encoder->info, &encoder->buffer, &encoder->length);
    encoder->info.image_width = width;
    encoder->info.image_height = height;
    encoder->info.input_components = components;
    encoder->info.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&encoder->info); // YCbCr with 2x2 luma sampling: 4:2:0
    jpeg_set_quality(&encoder->info, quality, TRUE);
    encoder->info.optimize_coding = optimizeCoding ? TRUE : FALSE;
    encoder->info.dct_method = JDCT_ISLOW;
    if (progressive) jpeg_simple_progression(&encoder->info);
    jpeg_start_compress(&encoder->info, TRUE);
    size_t rowBytes = (size_t)width * (size_t)components;
    JDIMENSION rowsPerCheck = rowBytes >= CThumb_jpegEncodeBytesPerCancelCheck
                                  ? 1 : (JDIMENSION)(CThumb_jpegEncodeBytesPerCancelCheck / (rowBytes ? rowBytes : 1));
    while (encoder->info.next_scanline < height) {
        if (check && encoder->info.next_scanline % rowsPerCheck == 0 && check(checkContext)) {
            encoder->cancelled = 1;
            snprintf(encoder->error.message, CTHUMB_MESSAGE_CAPACITY, "cancelled");
            longjmp(encoder->error.jump, 1); // to this function's own cleanup above
        }
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)encoder->info.next_scanline * rowStride);
        jpeg_write_scanlines(&encoder->info, &row, 1);
    }
    jpeg_finish_compress(&encoder->info);
    *output = encoder->buffer;
    *outputLength = encoder->length;
    jpeg_destroy_compress(&encoder->info);
    free(encoder);
    return 0;
}

void CThumb_Free(void *pointer) { free(pointer); }
