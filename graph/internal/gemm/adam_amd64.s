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
