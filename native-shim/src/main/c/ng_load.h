/* Loading: the constructor, promotion into the global scope, the destructor (ng_load.c). */
#ifndef NG_LOAD_H
#define NG_LOAD_H

#pragma GCC visibility push(hidden)

/* Puts this library in the global scope (RTLD_GLOBAL, NODELETE); 0 and the last error set if not. */
int ng_promote(void);

#pragma GCC visibility pop

#endif
