//go:build !purego

#include "textflag.h"

// func mulKernel512(dst, a, b *float64, groups int)
//
// dst = a·b eight lanes at a time.
TEXT ·mulKernel512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ groups+24(FP), CX
	TESTQ CX, CX
	JE    mdone

mloop:
	VMOVUPD (SI), Z0
	VMULPD  (DX), Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	DECQ    CX
	JNE     mloop
	VZEROUPPER

mdone:
	RET

// func mulAddKernel512(dst, a, b *float64, groups int)
//
// dst += a·b eight lanes at a time: the product rounded, then the sum (no
// fused multiply-add), as the Go loop rounds it.
TEXT ·mulAddKernel512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ groups+24(FP), CX
	TESTQ CX, CX
	JE    madone

maloop:
	VMOVUPD (SI), Z0
	VMULPD  (DX), Z0, Z0
	VADDPD  (DI), Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	DECQ    CX
	JNE     maloop
	VZEROUPPER

madone:
	RET

// func addKernel512(dst, a *float64, groups int)
//
// dst += a eight lanes at a time.
TEXT ·addKernel512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ groups+16(FP), CX
	TESTQ CX, CX
	JE    adone

aloop:
	VMOVUPD (DI), Z0
	VADDPD  (SI), Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	DECQ    CX
	JNE     aloop
	VZEROUPPER

adone:
	RET

// func scaleKernel512(dst *float64, v float64, groups int)
//
// dst *= v eight lanes at a time.
TEXT ·scaleKernel512(SB), NOSPLIT, $0-24
	MOVQ         dst+0(FP), DI
	VBROADCASTSD v+8(FP), Z1
	MOVQ         groups+16(FP), CX
	TESTQ        CX, CX
	JE           scdone

scloop:
	VMULPD  (DI), Z1, Z0
	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	DECQ    CX
	JNE     scloop

scdone:
	VZEROUPPER
	RET

// func quadArgKernel512(dst, zz, c *float64, xi float64, groups int)
//
// dst = ((xi + zz) − 2c)·(−½) eight lanes at a time, each operation
// rounding as QuadArg's Go loop does (2c as c + c, both exact).
TEXT ·quadArgKernel512(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         zz+8(FP), SI
	MOVQ         c+16(FP), DX
	VBROADCASTSD xi+24(FP), Z1
	MOVQ         groups+32(FP), CX
	MOVQ         $0xbfe0000000000000, AX
	VPBROADCASTQ AX, Z2
	TESTQ        CX, CX
	JE           qadone

qaloop:
	VADDPD  (SI), Z1, Z0
	VMOVUPD (DX), Z3
	VADDPD  Z3, Z3, Z3
	VSUBPD  Z3, Z0, Z0
	VMULPD  Z2, Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	DECQ    CX
	JNE     qaloop

qadone:
	VZEROUPPER
	RET
