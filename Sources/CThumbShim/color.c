// Little CMS wrappers: lcms2's pixel-format constants are macro expressions Swift cannot
// import, so the transform is built here.
#include "CThumbShim.h"

#include <lcms2.h>
#include <stdlib.h>
#include <string.h>

struct CThumb_ColorTransform {
    cmsHTRANSFORM transform;
};

static void CThumb_lcmsSilence(cmsContext context, cmsUInt32Number code, const char *text) {
    (void)context; (void)code; (void)text; // a bad profile is reported by a NULL transform
}

CThumb_ColorTransform *CThumb_ColorTransformCreate(const uint8_t *profile, size_t length,
                                                   CThumb_PixelLayout input) {
    cmsSetLogErrorHandler(CThumb_lcmsSilence);
    // Lab pixels need no embedded profile: ICC's PCS (D50) is what Lab files mean (Photoshop's
    // Lab TIFFs; Pillow reads them the same way), and lcms builds it.
    cmsHPROFILE source = input == CThumb_PixelLab8 ? cmsCreateLab4Profile(NULL)
                                                   : cmsOpenProfileFromMem(profile, (cmsUInt32Number)length);
    if (!source) return NULL;
    cmsColorSpaceSignature space = cmsGetColorSpace(source);
    cmsUInt32Number inputFormat, outputFormat = TYPE_RGB_8;
    // No one-pixel memo in the transform: it then keeps no state between calls, so one transform
    // serves every worker thread at once (thumbd caches built transforms), with the same results.
    cmsUInt32Number flags = cmsFLAGS_NOCACHE;
    switch (input) {
    case CThumb_PixelRGB8: inputFormat = TYPE_RGB_8; break;
    case CThumb_PixelRGBA8:
        inputFormat = TYPE_RGBA_8;
        outputFormat = TYPE_RGBA_8;
        flags |= cmsFLAGS_COPY_ALPHA;
        break;
    case CThumb_PixelCMYK8: inputFormat = TYPE_CMYK_8; break;
    case CThumb_PixelCMYK8Inverted: inputFormat = TYPE_CMYK_8_REV; break;
    case CThumb_PixelLab8: inputFormat = TYPE_Lab_8; break;
    default: cmsCloseProfile(source); return NULL;
    }
    int wantsCMYK = input == CThumb_PixelCMYK8 || input == CThumb_PixelCMYK8Inverted;
    cmsColorSpaceSignature wanted = input == CThumb_PixelLab8 ? cmsSigLabData : wantsCMYK ? cmsSigCmykData : cmsSigRgbData;
    if (space != wanted) {
        cmsCloseProfile(source);
        return NULL;
    }
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    cmsHTRANSFORM transform = srgb ? cmsCreateTransform(source, inputFormat, srgb, outputFormat,
                                                        INTENT_PERCEPTUAL, flags)
                                   : NULL;
    cmsCloseProfile(source);
    if (srgb) cmsCloseProfile(srgb);
    if (!transform) return NULL;
    CThumb_ColorTransform *result = malloc(sizeof(CThumb_ColorTransform));
    if (!result) {
        cmsDeleteTransform(transform);
        return NULL;
    }
    result->transform = transform;
    return result;
}

void CThumb_ColorTransformApply(CThumb_ColorTransform *transform, const uint8_t *input,
                                uint8_t *output, size_t pixelCount) {
    cmsDoTransform(transform->transform, input, output, (cmsUInt32Number)pixelCount);
}

void CThumb_ColorTransformDestroy(CThumb_ColorTransform *transform) {
    if (!transform) return;
    cmsDeleteTransform(transform->transform);
    free(transform);
}

int CThumb_ICCProfileFromPrimaries(const double white[2], const double red[2], const double green[2],
                                   const double blue[2], CThumb_ToneCurve curve, double gamma,
                                   uint8_t **profile, size_t *length) {
    *profile = NULL;
    *length = 0;
    cmsSetLogErrorHandler(CThumb_lcmsSilence);
    // A white point or primary with y = 0 has no XYZ: lcms would divide by it.
    if (white[1] <= 0 || red[1] <= 0 || green[1] <= 0 || blue[1] <= 0) return -1;
    cmsCIExyY whitePoint = {white[0], white[1], 1.0};
    cmsCIExyYTRIPLE primaries = {{red[0], red[1], 1.0}, {green[0], green[1], 1.0}, {blue[0], blue[1], 1.0}};
    cmsToneCurve *tone;
    if (curve == CThumb_CurveSRGB) {
        // IEC 61966-2-1 as lcms's parametric type 4: Y = (aX + b)^g for X >= d, else cX.
        const cmsFloat64Number srgb[5] = {2.4, 1.0 / 1.055, 0.055 / 1.055, 1.0 / 12.92, 0.04045};
        tone = cmsBuildParametricToneCurve(NULL, 4, srgb);
    } else {
        if (!(gamma > 0 && gamma < 10)) return -1;
        tone = cmsBuildGamma(NULL, gamma);
    }
    if (!tone) return -1;
    cmsToneCurve *curves[3] = {tone, tone, tone};
    cmsHPROFILE built = cmsCreateRGBProfile(&whitePoint, &primaries, curves);
    cmsFreeToneCurve(tone);
    if (!built) return -1;
    cmsUInt32Number size = 0;
    int result = -1;
    if (cmsSaveProfileToMem(built, NULL, &size) && size > 0) {
        uint8_t *bytes = malloc(size);
        if (bytes && cmsSaveProfileToMem(built, bytes, &size) && size >= 36) {
            // The header's creation date (bytes 24-35) is the clock's: zeroed, the same primaries
            // give the same bytes, and thumbd's transform cache (keyed by bytes) finds them again.
            memset(bytes + 24, 0, 12);
            *profile = bytes;
            *length = size;
            result = 0;
        } else {
            free(bytes);
        }
    }
    cmsCloseProfile(built);
    return result;
}
