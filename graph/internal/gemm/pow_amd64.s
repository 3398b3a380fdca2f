//go:build !purego

#include "textflag.h"

// POW raises Z0 (b) to the power in R11 into Z1 by binary exponentiation,
// in intPowShift's order: r takes b at the first set bit, then r·b at each
// later one; b is squared while bits remain (Z13 holds 1.0, r for p = 0).
// Clobbers R9, R10 and Z0; the labels are the caller's, distinct per use.
#define POW(bits, after, nobit, mul, nosq) \
	VMOVAPD Z13, Z1;   \
	MOVQ    R11, R9;   \
	MOVQ    $1, R10;   \
bits:                  \
	TESTQ   R9, R9;    \
	JE      after;     \
	TESTQ   $1, R9;    \
	JE      nobit;     \
	TESTQ   R10, R10;  \
	JE      mul;       \
	VMOVAPD Z0, Z1;    \
	XORQ    R10, R10;  \
	JMP     nobit;     \
mul:                   \
	VMULPD  Z0, Z1, Z1; \
nobit:                 \
	CMPQ    R9, $1;    \
	JLE     nosq;      \
	VMULPD  Z0, Z0, Z0; \
nosq:                  \
	SHRQ    $1, R9;    \
	JMP     bits;      \
after:

// func powKernel512(out, x, gr *float64, groups, p int, shift, scale float64, flags int)
//
// out = scale·(x + shift)^p, times g first when flags bit 0 is set, eight
// lanes at a time: the shift added only when flags bit 1 is set, the power
// by binary exponentiation in the order of the Go loop it replaces
// (intPowShift: r takes b at the first set bit, then r·b at each later
// one; b squared while bits remain), no fused multiply-add, so each lane
// equals the Go result bit for bit. Each group's chain of products is
// short and predictable, so groups overlap in the out-of-order core.
TEXT ·powKernel512(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ gr+16(FP), R8
	MOVQ groups+24(FP), CX
	MOVQ p+32(FP), R11
	VBROADCASTSD shift+40(FP), Z15
	VBROADCASTSD scale+48(FP), Z14
	MOVQ flags+56(FP), R12
	MOVQ $0x3FF0000000000000, AX
	VPBROADCASTQ AX, Z13      // 1.0
	TESTQ CX, CX
	JE    pdone

ploop:
	VMOVUPD (SI), Z0
	BTQ     $1, R12
	JCC     pnoshift
	VADDPD  Z15, Z0, Z0       // b = x + shift

pnoshift:
	POW(pbits, pafter, pnobit, pmul, pnosq)
	BTQ     $0, R12
	JCC     pnog
	VMULPD  (R8), Z1, Z1      // r·g
	ADDQ    $64, R8

pnog:
	VMULPD  Z14, Z1, Z1       // ·scale
	VMOVUPD Z1, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	DECQ    CX
	JNE     ploop
	VZEROUPPER

pdone:
	RET

// func powSum2Kernel512(out, x, g0, g1 *float64, groups, p0, d int, shift, c0, c1 float64, flags int)
//
// out = (r·g0)·c0 + (r·b^d·g1)·c1 with r = (x + shift)^p0 as powKernel512
// raises it (the shift added only when flags bit 1 is set) and b = x + shift
// multiplied in d times, one product at a time: the Go loop of
// graph's PowSum of two terms, bit for bit.
TEXT ·powSum2Kernel512(SB), NOSPLIT, $0-88
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ g0+16(FP), R8
	MOVQ g1+24(FP), R13
	MOVQ groups+32(FP), CX
	MOVQ p0+40(FP), R11
	MOVQ d+48(FP), R14
	VBROADCASTSD shift+56(FP), Z15
	VBROADCASTSD c0+64(FP), Z12
	VBROADCASTSD c1+72(FP), Z11
	MOVQ flags+80(FP), R12
	MOVQ $0x3FF0000000000000, AX
	VPBROADCASTQ AX, Z13      // 1.0
	TESTQ CX, CX
	JE    sdone

sloop:
	VMOVUPD (SI), Z0
	VADDPD  Z15, Z0, Z2       // b = x + shift, for the steps
	BTQ     $1, R12
	JCC     snoshift
	VMOVAPD Z2, Z0

snoshift:
	POW(sbits, safter, snobit, smul, snosq)
	VMULPD  (R8), Z1, Z3      // r·g0
	VMULPD  Z12, Z3, Z3       // ·c0
	MOVQ    R14, R9

ssteps:
	TESTQ   R9, R9
	JE      sstepped
	VMULPD  Z2, Z1, Z1        // r·b
	DECQ    R9
	JMP     ssteps

sstepped:
	VMULPD  (R13), Z1, Z1     // r·g1
	VMULPD  Z11, Z1, Z1       // ·c1
	VADDPD  Z1, Z3, Z3
	VMOVUPD Z3, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	ADDQ    $64, R8
	ADDQ    $64, R13
	DECQ    CX
	JNE     sloop
	VZEROUPPER

sdone:
	RET
