//go:build !purego

#include "textflag.h"

// func expKernel(dst, src *float64, groups int, k *ExpConsts) int
//
// eˣ four lanes at a time, the operations of graph's scalar exp in the same
// order with no fused multiply-add, so each lane equals the scalar result
// bit for bit. k holds broadcast constants: log2e, ½, ln2Hi, ln2Lo, 1, the
// Taylor coefficients 1/2! … 1/13!, the exponent bias 1023 (as an int64) and
// the fast range's ends −708 and 709. It stops before the first group with
// a lane outside (−708, 709) or NaN and returns the elements done.
TEXT ·expKernel(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ groups+16(FP), CX
	MOVQ k+24(FP), DX
	XORQ R8, R8
	TESTQ CX, CX
	JE   done

loop:
	VMOVUPD (SI), Y0
	VCMPPD  $0x1e, 576(DX), Y0, Y12 // x > −708
	VCMPPD  $0x11, 608(DX), Y0, Y13 // x < 709
	VANDPD  Y13, Y12, Y12
	VMOVMSKPD Y12, AX
	CMPQ    AX, $15
	JNE     stop
	VMULPD  0(DX), Y0, Y1           // x·log2e
	VADDPD  32(DX), Y1, Y1          // + ½
	VROUNDPD $1, Y1, Y1             // k = floor
	VMULPD  64(DX), Y1, Y2          // k·ln2Hi
	VSUBPD  Y2, Y0, Y2              // x − k·ln2Hi
	VMULPD  96(DX), Y1, Y3          // k·ln2Lo
	VSUBPD  Y3, Y2, Y2              // r
	VMULPD  Y2, Y2, Y3              // r²
	VMULPD  Y3, Y3, Y4              // r⁴
	VADDPD  128(DX), Y2, Y5         // p01 = 1 + r
	VMULPD  192(DX), Y2, Y6
	VADDPD  160(DX), Y6, Y6         // p23 = c2 + c3·r
	VMULPD  256(DX), Y2, Y7
	VADDPD  224(DX), Y7, Y7         // p45
	VMULPD  320(DX), Y2, Y8
	VADDPD  288(DX), Y8, Y8         // p67
	VMULPD  384(DX), Y2, Y9
	VADDPD  352(DX), Y9, Y9         // p89
	VMULPD  448(DX), Y2, Y10
	VADDPD  416(DX), Y10, Y10       // pab
	VMULPD  512(DX), Y2, Y11
	VADDPD  480(DX), Y11, Y11       // pcd
	VMULPD  Y6, Y3, Y6
	VADDPD  Y6, Y5, Y5              // q0 = p01 + p23·r²
	VMULPD  Y8, Y3, Y8
	VADDPD  Y8, Y7, Y7              // q1 = p45 + p67·r²
	VMULPD  Y10, Y3, Y10
	VADDPD  Y10, Y9, Y9             // q2 = p89 + pab·r²
	VMULPD  Y7, Y4, Y7
	VADDPD  Y7, Y5, Y5              // q0 + q1·r⁴
	VMULPD  Y11, Y4, Y11
	VADDPD  Y11, Y9, Y9             // q2 + pcd·r⁴
	VMULPD  Y4, Y4, Y4              // r⁸
	VMULPD  Y4, Y9, Y9
	VADDPD  Y9, Y5, Y5              // p
	VCVTTPD2DQY Y1, X1
	VPMOVSXDQ X1, Y1
	VPADDQ  544(DX), Y1, Y1         // k + 1023
	VPSLLQ  $52, Y1, Y1             // 2ᵏ
	VMULPD  Y1, Y5, Y5
	VMOVUPD Y5, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $4, R8
	DECQ    CX
	JNE     loop

stop:
	VZEROUPPER

done:
	MOVQ R8, ret+32(FP)
	RET
