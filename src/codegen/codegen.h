/*
 * CUDA C code generation from a lowered kernel (ts_program_cuda in
 * tessel.h): the code generator reads the program and nothing else.
 */
#ifndef TS_CODEGEN_H
#define TS_CODEGEN_H

#include "../ir/program_ir.h"
#include "tessel/program.h"

#endif
