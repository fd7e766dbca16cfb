// Scan selection for progressive JPEGs: the stream minus the scans a scaled decode cannot show.
//
// At DCT scale 1/8 libjpeg gives a component whose scaled block is 1x1 pixel to jpeg_idct_1x1,
// which reads the block's DC coefficient only; the AC scans of such a component are entropy-
// decoded for nothing. This walk copies the stream without those scans' SOS segments and entropy-
// coded data, and keeps everything else in order (every other marker segment, every DC scan, DC
// refinements included, and the AC scans of the components that still need them), so libjpeg
// reads the same tables and restart intervals and builds the same DC coefficients.
//
// The walk leaves a stream whole (returns 0) whenever it cannot be sure the decode would be the
// same, so that libjpeg's own errors and warnings on a damaged file stay what they were: anything
// it cannot parse, bytes outside a segment, no EOI, more scans than the cap, a progression libjpeg
// would warn about, or one that leaves a coefficient unfinished (libjpeg then smooths blocks, and
// from DC-only data its smoothing would also move the DC values). It never reads outside `data`.
#include "CThumbShim.h"

#include <stdlib.h>
#include <string.h>

enum {
    CThumb_scanMaxComponents = 10, // libjpeg's MAX_COMPONENTS
    CThumb_scanMaxInScan = 4,      // MAX_COMPS_IN_SCAN
    CThumb_scanTableSlots = 4,        // NUM_HUFF_TBLS
};

typedef enum { CThumb_tableUndefined = 0, CThumb_tableUsable, CThumb_tableBroken } CThumb_TableState;

typedef struct {
    const uint8_t *data;
    size_t length;
    unsigned acComponents; // bit i: the frame's i-th component needs its AC coefficients
    int maxScans;
    uint8_t *output;       // room for `length` bytes
    size_t outputLength;
    int components;        // 0 until the SOF2 segment
    uint8_t ids[CThumb_scanMaxComponents];
    // libjpeg's coef_bits: per component and coefficient, -1 before any scan, else the Al of the
    // last scan that covered it (0: known exactly).
    signed char bits[CThumb_scanMaxComponents][64];
    CThumb_TableState acTables[CThumb_scanTableSlots];
    int scans;
    int keptScans;
    size_t headerBytes;
    size_t skippedBytes;
} CThumb_ScanWalk;

static size_t CThumb_be16(const uint8_t *bytes) { return (size_t)bytes[0] << 8 | bytes[1]; }

// Kept bytes never outnumber the stream's: `output` has room for them all.
static void CThumb_scanEmit(CThumb_ScanWalk *walk, size_t from, size_t to) {
    memcpy(walk->output + walk->outputLength, walk->data + from, to - from);
    walk->outputLength += to - from;
}

// Where the entropy-coded data starting at `at` ends: at the first 0xFF that is neither a stuffed
// data byte (FF 00) nor a restart marker (FF D0-D7). `length` when the stream ends first.
static size_t CThumb_entropyEnd(const uint8_t *data, size_t length, size_t at) {
    while (at < length) {
        const uint8_t *mark = memchr(data + at, 0xFF, length - at);
        if (!mark) return length;
        size_t offset = (size_t)(mark - data);
        if (offset + 1 >= length) return length;
        uint8_t next = data[offset + 1];
        if (next != 0x00 && (next < 0xD0 || next > 0xD7)) return offset;
        at = offset + 2;
    }
    return length;
}

// A Huffman table's code lengths fit a prefix code, as jpeg_make_d_derived_tbl requires.
static int CThumb_codeLengthsFit(const uint8_t counts[16]) {
    unsigned long code = 0;
    int longest = 0;
    for (int size = 1; size <= 16; size++) if (counts[size - 1]) longest = size;
    for (int size = 1; size <= longest; size++) {
        code += counts[size - 1];
        if (code >= 1ul << size) return 0;
        code <<= 1;
    }
    return 1;
}

// A DHT segment as libjpeg's get_dht reads it; remembers which AC tables a skipped scan may use.
static int CThumb_scanTables(CThumb_ScanWalk *walk, const uint8_t *body, size_t length) {
    while (length > 16) {
        unsigned index = body[0];
        size_t count = 0;
        for (int i = 1; i <= 16; i++) count += body[i];
        length -= 17;
        if (count > 256 || count > length) return 0;
        int isAC = (index & 0x10) != 0;
        unsigned slot = isAC ? index - 0x10 : index;
        if (slot >= CThumb_scanTableSlots) return 0;
        if (isAC) walk->acTables[slot] = CThumb_codeLengthsFit(body + 1) ? CThumb_tableUsable : CThumb_tableBroken;
        body += 17 + count;
        length -= count;
    }
    return length == 0;
}

static int CThumb_scanFrame(CThumb_ScanWalk *walk, const uint8_t *body, size_t length) {
    if (walk->components || length < 6) return 0;
    int count = body[5];
    if (count < 1 || count > CThumb_scanMaxComponents || length != 6 + 3 * (size_t)count) return 0;
    for (int i = 0; i < count; i++) {
        uint8_t id = body[6 + 3 * i];
        for (int j = 0; j < i; j++) if (walk->ids[j] == id) return 0;
        walk->ids[i] = id;
    }
    walk->components = count;
    memset(walk->bits, -1, sizeof walk->bits);
    return 1;
}

// An SOS segment: checks it as libjpeg would (errors and progression warnings alike), follows the
// progression, and says whether the scan is kept. -1: leave the stream whole.
static int CThumb_scanHeader(CThumb_ScanWalk *walk, const uint8_t *body, size_t length) {
    if (!walk->components || length < 1) return -1;
    int count = body[0];
    if (count < 1 || count > CThumb_scanMaxInScan || length != 4 + 2 * (size_t)count) return -1;
    int indexes[CThumb_scanMaxInScan];
    for (int i = 0; i < count; i++) {
        int found = -1;
        for (int c = 0; c < walk->components; c++) if (walk->ids[c] == body[1 + 2 * i]) found = c;
        if (found < 0) return -1;
        for (int j = 0; j < i; j++) if (indexes[j] == found) return -1;
        indexes[i] = found;
    }
    int start = body[1 + 2 * count], end = body[2 + 2 * count];
    int high = body[3 + 2 * count] >> 4, low = body[3 + 2 * count] & 15;
    int isDC = start == 0;
    if (isDC ? end != 0 : (start > end || end > 63 || count != 1)) return -1;
    if ((high != 0 && low != high - 1) || low > 13) return -1;
    for (int i = 0; i < count; i++) {
        signed char *bits = walk->bits[indexes[i]];
        if (!isDC && bits[0] < 0) return -1;
        for (int k = start; k <= end; k++) {
            if (high != (bits[k] < 0 ? 0 : bits[k])) return -1;
            bits[k] = (signed char)low;
        }
    }
    walk->scans += 1;
    if (walk->scans > walk->maxScans) return -1;
    if (isDC || (walk->acComponents & (1u << indexes[0]))) return 1;
    // libjpeg would build this scan's table before decoding it: a stream whose skipped scan names
    // a missing or broken table is left whole, to fail as it always did.
    unsigned table = body[2] & 15;
    if (table >= CThumb_scanTableSlots || walk->acTables[table] != CThumb_tableUsable) return -1;
    return 0;
}

static int CThumb_scanWalk(CThumb_ScanWalk *walk) {
    const uint8_t *data = walk->data;
    size_t length = walk->length;
    if (length < 2 || data[0] != 0xFF || data[1] != 0xD8) return 0;
    CThumb_scanEmit(walk, 0, 2);
    size_t at = 2;
    for (;;) {
        size_t from = at;
        // libjpeg skips fill bytes (FF FF ...) before a marker silently, and warns about anything else.
        if (at >= length || data[at] != 0xFF) return 0;
        while (at + 1 < length && data[at + 1] == 0xFF) at++;
        if (at + 1 >= length) return 0;
        uint8_t marker = data[at + 1];
        if (marker == 0xD9) {
            // libjpeg stops reading at EOI; what follows (an appended preview, padding, garbage) is
            // kept too, so that the kept stream is always the file minus its skipped scans.
            CThumb_scanEmit(walk, from, length);
            break;
        }
        if (marker < 0xC0 || (marker >= 0xD0 && marker <= 0xD8)) return 0; // TEM, reserved, RSTn, SOI
        if (at + 4 > length) return 0;
        size_t segment = CThumb_be16(data + at + 2);
        if (segment < 2 || segment > length - at - 2) return 0;
        const uint8_t *body = data + at + 4;
        size_t bodyLength = segment - 2, end = at + 2 + segment;
        switch (marker) {
        case 0xC2:
            if (!CThumb_scanFrame(walk, body, bodyLength)) return 0;
            break;
        case 0xC4:
            if (!CThumb_scanTables(walk, body, bodyLength)) return 0;
            break;
        case 0xDB: case 0xDC: case 0xDD: case 0xFE: // DQT, DNL, DRI, COM: read alike in both streams
            break;
        case 0xDA: {
            int kept = CThumb_scanHeader(walk, body, bodyLength);
            if (kept < 0) return 0;
            size_t dataEnd = CThumb_entropyEnd(data, length, end);
            if (dataEnd >= length) return 0;
            if (walk->scans == 1) {
                // libjpeg's header read stops here: the stream up to this point must be the file's own.
                if (!kept || walk->outputLength + (end - from) != end) return 0;
                walk->headerBytes = end;
            }
            if (kept) {
                CThumb_scanEmit(walk, from, dataEnd);
                walk->keptScans += 1;
            } else {
                walk->skippedBytes += dataEnd - from;
            }
            at = dataEnd;
            continue;
        }
        default:
            if (marker < 0xE0 || marker > 0xEF) return 0; // another SOFn, DAC, JPGn: not this decode
        }
        CThumb_scanEmit(walk, from, end);
        at = end;
    }
    if (walk->scans == 0 || walk->skippedBytes == 0) return 0;
    for (int c = 0; c < walk->components; c++)
        for (int k = 0; k < 64; k++)
            if (walk->bits[c][k] != 0) return 0;
    return 1;
}

int CThumb_JPEGKeepScans(const uint8_t *data, size_t length, unsigned acComponents, int maxScans,
                         uint8_t **output, CThumb_JPEGScanSelection *selection) {
    *output = NULL;
    memset(selection, 0, sizeof(*selection));
    if (!data || length < 2) return 0;
    // One pass, copying as it goes into room for the whole stream (the kept part is all that is
    // written, so the rest is never touched), then shrunk to what was kept.
    uint8_t *kept = malloc(length);
    if (!kept) return 0;
    CThumb_ScanWalk walk = {.data = data, .length = length, .acComponents = acComponents, .maxScans = maxScans,
                            .output = kept};
    if (!CThumb_scanWalk(&walk)) {
        free(kept);
        return 0;
    }
    uint8_t *shrunk = realloc(kept, walk.outputLength);
    *output = shrunk ? shrunk : kept;
    selection->scans = walk.scans;
    selection->keptScans = walk.keptScans;
    selection->keptBytes = walk.outputLength;
    selection->headerBytes = walk.headerBytes;
    selection->skippedBytes = walk.skippedBytes;
    return 1;
}
