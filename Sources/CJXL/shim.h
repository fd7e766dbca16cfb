#include <jxl/decode.h>
#include <jxl/color_encoding.h>
