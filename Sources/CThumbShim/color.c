// Little CMS wrappers: lcms2's pixel-format constants are macro expressions Swift cannot
// import, so the transform is built here.
#include "CThumbShim.h"

#include <lcms2.h>
#include <stdlib.h>

struct CThumb_ColorTransform {
    cmsHTRANSFORM transform;
};

static void CThumb_lcmsSilence(cmsContext context, cmsUInt32Number code, const char *text) {
    (void)context; (void)code; (void)text; // a bad profile is reported by a NULL transform
}

CThumb_ColorTransform *CThumb_ColorTransformCreate(const uint8_t *profile, size_t length,
                                                   CThumb_PixelLayout input) {
    cmsSetLogErrorHandler(CThumb_lcmsSilence);
    cmsHPROFILE source = cmsOpenProfileFromMem(profile, (cmsUInt32Number)length);
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
    default: cmsCloseProfile(source); return NULL;
    }
    int wantsCMYK = input == CThumb_PixelCMYK8 || input == CThumb_PixelCMYK8Inverted;
    if ((wantsCMYK && space != cmsSigCmykData) || (!wantsCMYK && space != cmsSigRgbData)) {
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
