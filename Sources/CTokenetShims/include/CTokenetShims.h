// Linux headers and C macros that Swift cannot import directly, wrapped as static inline functions.
#ifndef CTOKENET_SHIMS_H
#define CTOKENET_SHIMS_H
#endif
