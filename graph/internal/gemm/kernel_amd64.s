//go:build !purego

#include "textflag.h"

// One packed step: rows r<6 of A (broadcast) times the 8 columns of B,
// accumulated in Y(2r) (columns 0–3) and Y(2r+1) (columns 4–7).
#define STEP(ao, bo) \
	VMOVUPD (bo)(DI), Y12; \
	VMOVUPD (bo+32)(DI), Y13; \
	VBROADCASTSD (ao)(SI), Y14; \
	VFMADD231PD Y12, Y14, Y0; \
	VFMADD231PD Y13, Y14, Y1; \
	VBROADCASTSD (ao+8)(SI), Y14; \
	VFMADD231PD Y12, Y14, Y2; \
	VFMADD231PD Y13, Y14, Y3; \
	VBROADCASTSD (ao+16)(SI), Y14; \
	VFMADD231PD Y12, Y14, Y4; \
	VFMADD231PD Y13, Y14, Y5; \
	VBROADCASTSD (ao+24)(SI), Y14; \
	VFMADD231PD Y12, Y14, Y6; \
	VFMADD231PD Y13, Y14, Y7; \
	VBROADCASTSD (ao+32)(SI), Y14; \
	VFMADD231PD Y12, Y14, Y8; \
	VFMADD231PD Y13, Y14, Y9; \
	VBROADCASTSD (ao+40)(SI), Y14; \
	VFMADD231PD Y12, Y14, Y10; \
	VFMADD231PD Y13, Y14, Y11

// c[row] += alpha·acc, alpha in Y14.
#define ROW(lo, hi) \
	VMOVUPD (DX), Y12; \
	VFMADD231PD lo, Y14, Y12; \
	VMOVUPD Y12, (DX); \
	VMOVUPD 32(DX), Y13; \
	VFMADD231PD hi, Y14, Y13; \
	VMOVUPD Y13, 32(DX)

// c[row] = alpha·acc, without reading c.
#define ROWSET(lo, hi) \
	VMULPD lo, Y14, Y12; \
	VMOVUPD Y12, (DX); \
	VMULPD hi, Y14, Y13; \
	VMOVUPD Y13, 32(DX)

// func kernel6x8(kc int, a, b, c *float64, ldc int, alpha float64, set bool)
TEXT ·kernel6x8(SB), NOSPLIT, $0-49
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $3, R8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	MOVQ CX, R9
	SHRQ $2, R9
	ANDQ $3, CX
	TESTQ R9, R9
	JE   tail

loop4:
	STEP(0, 0)
	STEP(48, 64)
	STEP(96, 128)
	STEP(144, 192)
	ADDQ $192, SI
	ADDQ $256, DI
	DECQ R9
	JNE  loop4

tail:
	TESTQ CX, CX
	JE    store

loop1:
	STEP(0, 0)
	ADDQ $48, SI
	ADDQ $64, DI
	DECQ CX
	JNE  loop1

store:
	VBROADCASTSD alpha+40(FP), Y14
	MOVBQZX set+48(FP), AX
	TESTQ AX, AX
	JNE   storeset
	ROW(Y0, Y1)
	ADDQ R8, DX
	ROW(Y2, Y3)
	ADDQ R8, DX
	ROW(Y4, Y5)
	ADDQ R8, DX
	ROW(Y6, Y7)
	ADDQ R8, DX
	ROW(Y8, Y9)
	ADDQ R8, DX
	ROW(Y10, Y11)
	VZEROUPPER
	RET

storeset:
	ROWSET(Y0, Y1)
	ADDQ R8, DX
	ROWSET(Y2, Y3)
	ADDQ R8, DX
	ROWSET(Y4, Y5)
	ADDQ R8, DX
	ROWSET(Y6, Y7)
	ADDQ R8, DX
	ROWSET(Y8, Y9)
	ADDQ R8, DX
	ROWSET(Y10, Y11)
	VZEROUPPER
	RET

// func copyGroups8(dst *float64, dstStride int, src *float64, srcStride int, n int)
// copies n groups of 8 doubles, the g-th from src[g·srcStride:] to
// dst[g·dstStride:] (strides in elements).
TEXT ·copyGroups8(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ srcStride+24(FP), R9
	MOVQ n+32(FP), CX
	SHLQ $3, R8
	SHLQ $3, R9
	TESTQ CX, CX
	JE   cgdone

cgloop:
	VMOVUPD (SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ CX
	JNE  cgloop

cgdone:
	VZEROUPPER
	RET
