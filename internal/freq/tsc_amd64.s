#include "textflag.h"

// func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL subleaf+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func rdtsc() uint64
//
// LFENCE first: RDTSC is not ordered, and without it the read may happen
// before the instructions that precede it (the end of a clock read) retire.
// On AMD processors LFENCE is dispatch-serializing where the kernel enables
// it, as Linux does since the Spectre mitigations.
TEXT ·rdtsc(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	SHLQ $32, DX
	ORQ DX, AX
	MOVQ AX, ret+0(FP)
	RET
