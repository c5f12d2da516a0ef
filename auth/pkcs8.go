package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"hash"
)

// Object identifiers of PKCS#5 v2 (RFC 8018) as OpenSSL writes encrypted PKCS#8 keys.
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

// EncryptedPrivateKeyInfo is PKCS#8's encrypted key (RFC 5958).
type EncryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

// PBES2Params are the parameters of PBES2.
type PBES2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

// PBKDF2Params are the parameters of PBKDF2.
type PBKDF2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a hostile key file can ask for.
const maxPBKDF2Iterations = 10_000_000

// DecryptPKCS8 decrypts an "ENCRYPTED PRIVATE KEY" (PBES2 with PBKDF2 and AES-CBC, what
// OpenSSL and Kafka's tooling produce) and returns the PKCS#8 DER of the key.
func DecryptPKCS8(der, password []byte) ([]byte, error) {
	bad := func(why string) error { return fmt.Errorf("%w: encrypted private key: %s", ErrInvalidTLSConfig, why) }
	var info EncryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, bad(err.Error())
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, bad("only PBES2 is supported")
	}
	var params PBES2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, bad(err.Error())
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, bad("only PBKDF2 is supported")
	}
	var kdf PBKDF2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, bad(err.Error())
	}
	if kdf.Iterations < 1 || kdf.Iterations > maxPBKDF2Iterations {
		return nil, bad("PBKDF2 iteration count out of range")
	}
	var prf func() hash.Hash
	switch alg := kdf.PRF.Algorithm; {
	case len(alg) == 0 || alg.Equal(oidHMACSHA1):
		prf = sha1.New
	case alg.Equal(oidHMACSHA256):
		prf = sha256.New
	case alg.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, bad("unsupported PBKDF2 PRF")
	}
	var keyLen int
	switch alg := params.EncryptionScheme.Algorithm; {
	case alg.Equal(oidAES128CBC):
		keyLen = 16
	case alg.Equal(oidAES192CBC):
		keyLen = 24
	case alg.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, bad("only AES-CBC encryption is supported")
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, bad("bad AES IV")
	}
	if len(info.Data) == 0 || len(info.Data)%aes.BlockSize != 0 {
		return nil, bad("ciphertext is not whole AES blocks")
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, bad(err.Error())
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, bad(err.Error())
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	pad := int(out[len(out)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, bad("wrong ssl.key.password (bad padding)")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, bad("wrong ssl.key.password (bad padding)")
		}
	}
	return out[:len(out)-pad], nil
}
