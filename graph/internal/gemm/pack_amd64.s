//go:build !purego

#include "textflag.h"

// TRANSPOSE8 turns Z0–Z7, eight rows of eight doubles, into Z8–Z15, their
// eight columns (Z8 holds element 0 of every row, …), through unpacks
// within 128-bit lanes and two rounds of lane shuffles. Z16–Z23 are
// scratch.
#define TRANSPOSE8 \
	VUNPCKLPD Z1, Z0, Z16; \
	VUNPCKHPD Z1, Z0, Z17; \
	VUNPCKLPD Z3, Z2, Z18; \
	VUNPCKHPD Z3, Z2, Z19; \
	VUNPCKLPD Z5, Z4, Z20; \
	VUNPCKHPD Z5, Z4, Z21; \
	VUNPCKLPD Z7, Z6, Z22; \
	VUNPCKHPD Z7, Z6, Z23; \
	VSHUFF64X2 $0x88, Z18, Z16, Z0; \
	VSHUFF64X2 $0xDD, Z18, Z16, Z1; \
	VSHUFF64X2 $0x88, Z19, Z17, Z2; \
	VSHUFF64X2 $0xDD, Z19, Z17, Z3; \
	VSHUFF64X2 $0x88, Z22, Z20, Z4; \
	VSHUFF64X2 $0xDD, Z22, Z20, Z5; \
	VSHUFF64X2 $0x88, Z23, Z21, Z6; \
	VSHUFF64X2 $0xDD, Z23, Z21, Z7; \
	VSHUFF64X2 $0x88, Z4, Z0, Z8; \
	VSHUFF64X2 $0xDD, Z4, Z0, Z12; \
	VSHUFF64X2 $0x88, Z5, Z1, Z10; \
	VSHUFF64X2 $0xDD, Z5, Z1, Z14; \
	VSHUFF64X2 $0x88, Z6, Z2, Z9; \
	VSHUFF64X2 $0xDD, Z6, Z2, Z13; \
	VSHUFF64X2 $0x88, Z7, Z3, Z11; \
	VSHUFF64X2 $0xDD, Z7, Z3, Z15

// func gather8Kernel512(dst *float64, rows *[8]*float64, w *float64, groups int)
//
// For q < 8·groups, dst[q·8+r] = rows[r][q], times w[q] when w is not nil:
// eight rows transposed eight columns at a time.
TEXT ·gather8Kernel512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ rows+8(FP), SI
	MOVQ 0(SI), R8
	MOVQ 8(SI), R9
	MOVQ 16(SI), R10
	MOVQ 24(SI), R11
	MOVQ 32(SI), R12
	MOVQ 40(SI), R13
	MOVQ 48(SI), AX
	MOVQ 56(SI), BX
	MOVQ w+16(FP), SI
	MOVQ groups+24(FP), CX
	XORQ DX, DX
	TESTQ CX, CX
	JE    g8done

g8loop:
	VMOVUPD (R8)(DX*1), Z0
	VMOVUPD (R9)(DX*1), Z1
	VMOVUPD (R10)(DX*1), Z2
	VMOVUPD (R11)(DX*1), Z3
	VMOVUPD (R12)(DX*1), Z4
	VMOVUPD (R13)(DX*1), Z5
	VMOVUPD (AX)(DX*1), Z6
	VMOVUPD (BX)(DX*1), Z7
	TESTQ SI, SI
	JE    g8plain
	VMOVUPD (SI)(DX*1), Z24
	VMULPD  Z24, Z0, Z0
	VMULPD  Z24, Z1, Z1
	VMULPD  Z24, Z2, Z2
	VMULPD  Z24, Z3, Z3
	VMULPD  Z24, Z4, Z4
	VMULPD  Z24, Z5, Z5
	VMULPD  Z24, Z6, Z6
	VMULPD  Z24, Z7, Z7

g8plain:
	TRANSPOSE8
	VMOVUPD Z8, (DI)
	VMOVUPD Z9, 64(DI)
	VMOVUPD Z10, 128(DI)
	VMOVUPD Z11, 192(DI)
	VMOVUPD Z12, 256(DI)
	VMOVUPD Z13, 320(DI)
	VMOVUPD Z14, 384(DI)
	VMOVUPD Z15, 448(DI)
	ADDQ    $64, DX
	ADDQ    $512, DI
	DECQ    CX
	JNE     g8loop

g8done:
	VZEROUPPER
	RET

// func gather6Kernel512(dst *float64, rows *[6]*float64, groups int)
//
// For q < 8·groups, dst[q·6+r] = rows[r][q]: six rows transposed eight
// columns at a time, as eight with two rows of no matter. Each column is
// stored whole, its last two lanes overwritten by the next column's store,
// but for the group's last, whose store is masked to six lanes so that
// nothing is written past the group (masking every store took longer).
TEXT ·gather6Kernel512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ rows+8(FP), SI
	MOVQ 0(SI), R8
	MOVQ 8(SI), R9
	MOVQ 16(SI), R10
	MOVQ 24(SI), R11
	MOVQ 32(SI), R12
	MOVQ 40(SI), R13
	MOVQ groups+16(FP), CX
	XORQ DX, DX
	MOVQ $0x3f, AX
	KMOVW AX, K1
	TESTQ CX, CX
	JE    g6done

g6loop:
	VMOVUPD (R8)(DX*1), Z0
	VMOVUPD (R9)(DX*1), Z1
	VMOVUPD (R10)(DX*1), Z2
	VMOVUPD (R11)(DX*1), Z3
	VMOVUPD (R12)(DX*1), Z4
	VMOVUPD (R13)(DX*1), Z5
	TRANSPOSE8
	VMOVUPD Z8, (DI)
	VMOVUPD Z9, 48(DI)
	VMOVUPD Z10, 96(DI)
	VMOVUPD Z11, 144(DI)
	VMOVUPD Z12, 192(DI)
	VMOVUPD Z13, 240(DI)
	VMOVUPD Z14, 288(DI)
	VMOVUPD Z15, K1, 336(DI)
	ADDQ    $64, DX
	ADDQ    $384, DI
	DECQ    CX
	JNE     g6loop

g6done:
	VZEROUPPER
	RET

// func strided6Kernel512(dst, src *float64, stride, n int)
//
// For g < n, dst[g·6+r] = src[g·stride+r], r < 6: six-value groups of
// strided rows, as packA's slivers of a transposed A take them. The loads
// are masked to six lanes (a group may end a slice); each store is whole,
// its last two lanes overwritten by the next group's, but for the last,
// masked to six so that nothing is written past 6n.
TEXT ·strided6Kernel512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), DX
	MOVQ n+24(FP), CX
	SHLQ $3, DX
	MOVQ $0x3f, AX
	KMOVW AX, K1
	TESTQ CX, CX
	JE    s6done
	DECQ  CX
	JE    s6last

s6loop:
	VMOVUPD.Z (SI), K1, Z0
	VMOVUPD   Z0, (DI)
	ADDQ      DX, SI
	ADDQ      $48, DI
	DECQ      CX
	JNE       s6loop

s6last:
	VMOVUPD.Z (SI), K1, Z0
	VMOVUPD   Z0, K1, (DI)

s6done:
	VZEROUPPER
	RET
