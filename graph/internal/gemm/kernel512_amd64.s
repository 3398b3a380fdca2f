//go:build !purego

#include "textflag.h"

// One packed step of the 6×16 tile: rows r<6 of A (broadcast) times the 8
// columns of sliver b0 (Z(2r)) and the 8 of sliver b1 (Z(2r+1)). Two
// broadcast registers alternate so that a row's broadcast need not wait
// for the previous row's multiplies.
#define STEP16(ao, bo) \
	VMOVUPD (bo)(DI), Z12; \
	VMOVUPD (bo)(R10), Z13; \
	VBROADCASTSD (ao)(SI), Z14; \
	VFMADD231PD Z12, Z14, Z0; \
	VFMADD231PD Z13, Z14, Z1; \
	VBROADCASTSD (ao+8)(SI), Z15; \
	VFMADD231PD Z12, Z15, Z2; \
	VFMADD231PD Z13, Z15, Z3; \
	VBROADCASTSD (ao+16)(SI), Z14; \
	VFMADD231PD Z12, Z14, Z4; \
	VFMADD231PD Z13, Z14, Z5; \
	VBROADCASTSD (ao+24)(SI), Z15; \
	VFMADD231PD Z12, Z15, Z6; \
	VFMADD231PD Z13, Z15, Z7; \
	VBROADCASTSD (ao+32)(SI), Z14; \
	VFMADD231PD Z12, Z14, Z8; \
	VFMADD231PD Z13, Z14, Z9; \
	VBROADCASTSD (ao+40)(SI), Z15; \
	VFMADD231PD Z12, Z15, Z10; \
	VFMADD231PD Z13, Z15, Z11

// c0[row] += alpha·lo, c1[row] += alpha·hi, alpha in Z14.
#define ROW16(lo, hi) \
	VMOVUPD (DX), Z12; \
	VFMADD231PD lo, Z14, Z12; \
	VMOVUPD Z12, (DX); \
	VMOVUPD (R11), Z13; \
	VFMADD231PD hi, Z14, Z13; \
	VMOVUPD Z13, (R11)

// c0[row] = alpha·lo, c1[row] = alpha·hi, without reading c.
#define ROWSET16(lo, hi) \
	VMULPD lo, Z14, Z12; \
	VMOVUPD Z12, (DX); \
	VMULPD hi, Z14, Z13; \
	VMOVUPD Z13, (R11)

// func kernel6x16(kc int, a, b0, b1, c0, c1 *float64, ldc int, alpha float64, set bool)
TEXT ·kernel6x16(SB), NOSPLIT, $0-65
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b0+16(FP), DI
	MOVQ b1+24(FP), R10
	MOVQ c0+32(FP), DX
	MOVQ c1+40(FP), R11
	MOVQ ldc+48(FP), R8
	SHLQ $3, R8
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	MOVQ CX, R9
	SHRQ $2, R9
	ANDQ $3, CX
	TESTQ R9, R9
	JE   tail

loop4:
	STEP16(0, 0)
	STEP16(48, 64)
	STEP16(96, 128)
	STEP16(144, 192)
	ADDQ $192, SI
	ADDQ $256, DI
	ADDQ $256, R10
	DECQ R9
	JNE  loop4

tail:
	TESTQ CX, CX
	JE    store

loop1:
	STEP16(0, 0)
	ADDQ $48, SI
	ADDQ $64, DI
	ADDQ $64, R10
	DECQ CX
	JNE  loop1

store:
	VBROADCASTSD alpha+56(FP), Z14
	MOVBQZX set+64(FP), AX
	TESTQ AX, AX
	JNE   storeset
	ROW16(Z0, Z1)
	ADDQ R8, DX
	ADDQ R8, R11
	ROW16(Z2, Z3)
	ADDQ R8, DX
	ADDQ R8, R11
	ROW16(Z4, Z5)
	ADDQ R8, DX
	ADDQ R8, R11
	ROW16(Z6, Z7)
	ADDQ R8, DX
	ADDQ R8, R11
	ROW16(Z8, Z9)
	ADDQ R8, DX
	ADDQ R8, R11
	ROW16(Z10, Z11)
	VZEROUPPER
	RET

storeset:
	ROWSET16(Z0, Z1)
	ADDQ R8, DX
	ADDQ R8, R11
	ROWSET16(Z2, Z3)
	ADDQ R8, DX
	ADDQ R8, R11
	ROWSET16(Z4, Z5)
	ADDQ R8, DX
	ADDQ R8, R11
	ROWSET16(Z6, Z7)
	ADDQ R8, DX
	ADDQ R8, R11
	ROWSET16(Z8, Z9)
	ADDQ R8, DX
	ADDQ R8, R11
	ROWSET16(Z10, Z11)
	VZEROUPPER
	RET
