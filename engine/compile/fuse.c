/* fuse.c — operator fusion. */
#define G_LOG_DOMAIN "twb-compile"

#include "engine/compile/program.h"

int
tw_pass_fuse (tw_program *p)
{
  return 0;
}
