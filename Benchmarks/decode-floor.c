// The decode floor of Benchmarks/render-bench.py: libjpeg-turbo decoding JPEGs at a DCT scale,
// every scanline read, nothing else (no resize, no encode, no output). A thumbnailer that decodes
// every file whole at the scale it picks cannot be faster than this.
//
//   gcc -O2 -o decode-floor Benchmarks/decode-floor.c -ljpeg
//   decode-floor [-s 1|2|4|8] FILE... [-s N FILE...]
//
// `-s N` sets the scale 1/N for the files after it (default 8). Each file is read whole into
// memory and decoded as thumbd decodes it: RGB output (CMYK for CMYK/YCCK files), JDCT_ISLOW,
// the library's default fancy upsampling and block smoothing, 16 rows a call. Prints one line:
// files, failures, decoded megapixels and seconds of wall time; exits 1 when a file failed.
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jpeglib.h> // after stdio.h: it uses FILE and size_t

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
} FloorError;

static void floorErrorExit(j_common_ptr info) {
    char message[JMSG_LENGTH_MAX];
    (*info->err->format_message)(info, message);
    fprintf(stderr, "decode-floor: %s\n", message);
    longjmp(((FloorError *)info->err)->jump, 1);
}

static void floorQuiet(j_common_ptr info, int level) { (void)info, (void)level; }

static unsigned char *readWhole(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    unsigned char *bytes = NULL;
    size_t used = 0, capacity = 0;
    for (;;) {
        if (used == capacity) {
            capacity = capacity ? capacity * 2 : 1 << 20;
            unsigned char *grown = realloc(bytes, capacity);
            if (!grown) break;
            bytes = grown;
        }
        size_t got = fread(bytes + used, 1, capacity - used, file);
        used += got;
        if (got == 0) break;
    }
    fclose(file);
    *length = used;
    return bytes;
}

// Decodes one file at 1/`scale`; returns the output pixels, or -1 on failure.
static long decode(const unsigned char *bytes, size_t length, int scale) {
    struct jpeg_decompress_struct info;
    FloorError error;
    unsigned char *volatile rows = NULL; // volatile: set after setjmp, freed after the longjmp
    info.err = jpeg_std_error(&error.base);
    error.base.error_exit = floorErrorExit;
    error.base.emit_message = floorQuiet;
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        free(rows);
        return -1;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, bytes, (unsigned long)length);
    jpeg_read_header(&info, TRUE);
    info.out_color_space = (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK)
                               ? JCS_CMYK : JCS_RGB;
    info.scale_num = 1;
    info.scale_denom = (unsigned int)scale;
    info.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&info);
    enum { batch = 16 };
    size_t stride = (size_t)info.output_width * (size_t)info.output_components;
    rows = malloc(stride * batch);
    if (!rows) longjmp(error.jump, 1);
    JSAMPROW pointers[batch];
    for (int i = 0; i < batch; i++) pointers[i] = rows + (size_t)i * stride;
    while (info.output_scanline < info.output_height) {
        if (jpeg_read_scanlines(&info, pointers, batch) == 0) break;
    }
    long pixels = (long)info.output_width * (long)info.output_height;
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    free(rows);
    return pixels;
}

int main(int argc, char **argv) {
    int scale = 8, files = 0, failures = 0;
    double megapixels = 0;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
            scale = atoi(argv[++i]);
            if (scale != 1 && scale != 2 && scale != 4 && scale != 8) {
                fprintf(stderr, "decode-floor: scale must be 1, 2, 4 or 8\n");
                return 64;
            }
            continue;
        }
        size_t length = 0;
        unsigned char *bytes = readWhole(argv[i], &length);
        long pixels = bytes && length ? decode(bytes, length, scale) : -1;
        free(bytes);
        files += 1;
        if (pixels < 0) {
            failures += 1;
            fprintf(stderr, "decode-floor: %s failed\n", argv[i]);
        } else {
            megapixels += pixels / 1e6;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    printf("files %d failures %d output_megapixels %.3f seconds %.3f\n", files, failures, megapixels, seconds);
    return failures ? 1 : 0;
}
