// Implementation file so SwiftPM builds this header-only target.
#include "CTokenetShims.h"
