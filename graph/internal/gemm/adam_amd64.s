//go:build !purego

#include "textflag.h"

// func adamKernel(x, m, v, grad *float64, groups int, k *AdamConsts)
//
// One Adam step four lanes at a time, the operations of Adam's scalar loop
// in the same order with no fused multiply-add:
// m ← b1·m + nb1·g, v ← b2·v + (nb2·g)·g, x ← x − (step·m)/(√v·rc2 + eps),
// so that each lane equals the scalar result bit for bit. VSQRTPD and
// VDIVPD are correctly rounded, as SQRTSD and DIVSD are.
TEXT ·adamKernel(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ grad+24(FP), R8
	MOVQ groups+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSD 0(AX), Y8    // b1
	VBROADCASTSD 8(AX), Y9    // nb1
	VBROADCASTSD 16(AX), Y10  // b2
	VBROADCASTSD 24(AX), Y11  // nb2
	VBROADCASTSD 32(AX), Y12  // step
	VBROADCASTSD 40(AX), Y13  // rc2
	VBROADCASTSD 48(AX), Y14  // eps
	TESTQ CX, CX
	JE    done

loop:
	VMOVUPD (R8), Y1          // g
	VMOVUPD (SI), Y0
	VMULPD  Y0, Y8, Y0        // b1·m
	VMULPD  Y1, Y9, Y2        // nb1·g
	VADDPD  Y2, Y0, Y0        // m
	VMOVUPD (DX), Y3
	VMULPD  Y3, Y10, Y3       // b2·v
	VMULPD  Y1, Y11, Y4       // nb2·g
	VMULPD  Y1, Y4, Y4        // (nb2·g)·g
	VADDPD  Y4, Y3, Y3        // v
	VMOVUPD Y0, (SI)
	VMOVUPD Y3, (DX)
	VSQRTPD Y3, Y3
	VMULPD  Y13, Y3, Y3       // √v·rc2
	VADDPD  Y14, Y3, Y3       // + eps
	VMULPD  Y0, Y12, Y0       // step·m
	VDIVPD  Y3, Y0, Y0        // (step·m)/(√v·rc2 + eps)
	VMOVUPD (DI), Y5
	VSUBPD  Y0, Y5, Y5        // x − …
	VMOVUPD Y5, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, R8
	DECQ    CX
	JNE     loop
	VZEROUPPER

done:
	RET

// func adamDecayKernel(x, m, v *float64, groups int, k *AdamConsts)
//
// adamKernel with a zero gradient: m ← b1·m, v ← b2·v, the same x update.
TEXT ·adamDecayKernel(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ groups+24(FP), CX
	MOVQ k+32(FP), AX
	VBROADCASTSD 0(AX), Y8    // b1
	VBROADCASTSD 16(AX), Y10  // b2
	VBROADCASTSD 32(AX), Y12  // step
	VBROADCASTSD 40(AX), Y13  // rc2
	VBROADCASTSD 48(AX), Y14  // eps
	TESTQ CX, CX
	JE    ddone

dloop:
	VMOVUPD (SI), Y0
	VMULPD  Y0, Y8, Y0        // b1·m
	VMOVUPD (DX), Y3
	VMULPD  Y3, Y10, Y3       // b2·v
	VMOVUPD Y0, (SI)
	VMOVUPD Y3, (DX)
	VSQRTPD Y3, Y3
	VMULPD  Y13, Y3, Y3
	VADDPD  Y14, Y3, Y3
	VMULPD  Y0, Y12, Y0
	VDIVPD  Y3, Y0, Y0
	VMOVUPD (DI), Y5
	VSUBPD  Y0, Y5, Y5
	VMOVUPD Y5, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	DECQ    CX
	JNE     dloop
	VZEROUPPER

ddone:
	RET

// func adamKernel512(x, m, v, grad *float64, groups int, k *AdamConsts)
//
// adamKernel eight lanes at a time in AVX-512 registers, the same
// operations in the same order: on a core with full-width 512-bit units
// the square root and division, which bound the update, take about the
// time of the four-lane ones.
TEXT ·adamKernel512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ grad+24(FP), R8
	MOVQ groups+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSD 0(AX), Z8    // b1
	VBROADCASTSD 8(AX), Z9    // nb1
	VBROADCASTSD 16(AX), Z10  // b2
	VBROADCASTSD 24(AX), Z11  // nb2
	VBROADCASTSD 32(AX), Z12  // step
	VBROADCASTSD 40(AX), Z13  // rc2
	VBROADCASTSD 48(AX), Z14  // eps
	TESTQ CX, CX
	JE    done512

loop512:
	VMOVUPD (R8), Z1          // g
	VMOVUPD (SI), Z0
	VMULPD  Z0, Z8, Z0        // b1·m
	VMULPD  Z1, Z9, Z2        // nb1·g
	VADDPD  Z2, Z0, Z0        // m
	VMOVUPD (DX), Z3
	VMULPD  Z3, Z10, Z3       // b2·v
	VMULPD  Z1, Z11, Z4       // nb2·g
	VMULPD  Z1, Z4, Z4        // (nb2·g)·g
	VADDPD  Z4, Z3, Z3        // v
	VMOVUPD Z0, (SI)
	VMOVUPD Z3, (DX)
	VSQRTPD Z3, Z3
	VMULPD  Z13, Z3, Z3       // √v·rc2
	VADDPD  Z14, Z3, Z3       // + eps
	VMULPD  Z0, Z12, Z0       // step·m
	VDIVPD  Z3, Z0, Z0        // (step·m)/(√v·rc2 + eps)
	VMOVUPD (DI), Z5
	VSUBPD  Z0, Z5, Z5        // x − …
	VMOVUPD Z5, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, R8
	DECQ    CX
	JNE     loop512
	VZEROUPPER

done512:
	RET

// func adamDecayKernel512(x, m, v *float64, groups int, k *AdamConsts)
//
// adamDecayKernel eight lanes at a time, as adamKernel512.
TEXT ·adamDecayKernel512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), DI
	MOVQ m+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ groups+24(FP), CX
	MOVQ k+32(FP), AX
	VBROADCASTSD 0(AX), Z8    // b1
	VBROADCASTSD 16(AX), Z10  // b2
	VBROADCASTSD 32(AX), Z12  // step
	VBROADCASTSD 40(AX), Z13  // rc2
	VBROADCASTSD 48(AX), Z14  // eps
	TESTQ CX, CX
	JE    ddone512

dloop512:
	VMOVUPD (SI), Z0
	VMULPD  Z0, Z8, Z0        // b1·m
	VMOVUPD (DX), Z3
	VMULPD  Z3, Z10, Z3       // b2·v
	VMOVUPD Z0, (SI)
	VMOVUPD Z3, (DX)
	VSQRTPD Z3, Z3
	VMULPD  Z13, Z3, Z3
	VADDPD  Z14, Z3, Z3
	VMULPD  Z0, Z12, Z0
	VDIVPD  Z3, Z0, Z0
	VMOVUPD (DI), Z5
	VSUBPD  Z0, Z5, Z5
	VMOVUPD Z5, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	DECQ    CX
	JNE     dloop512
	VZEROUPPER

ddone512:
	RET
