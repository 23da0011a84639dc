#include "CTokenetProtos.h"
