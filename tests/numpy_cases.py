"""Expressions of NumPy's and opt_einsum's own einsum tests, as data.

OPT_EINSUM: the expression list of opt_einsum's tests/test_contract.py. NUMPY: the forms
NumPy's numpy/_core/tests/test_einsum.py checks (views, sums, broadcasting, singleton
broadcasting, edge cases), each with the operand shapes it uses (smaller sizes).
"""
from __future__ import annotations

OPT_EINSUM = [
    # hadamard-like products
    "a,ab,abc->abc", "a,b,ab->ab",
    # index transformations
    "ea,fb,gc,hd,abcd->efgh", "ea,fb,abcd,gc,hd->efgh", "abcd,ea,fb,gc,hd->efgh",
    # complex contractions
    "acdf,jbje,gihb,hfac,gfac,gifabc,hfac", "cd,bdhe,aidb,hgca,gc,hgibcd,hgac",
    "abhe,hidj,jgba,hiab,gab", "bde,cdh,agdb,hica,ibd,hgicd,hiac",
    "chd,bde,agbc,hiad,hgc,hgi,hiad", "chd,bde,agbc,hiad,bdi,cgh,agdb",
    "bdhe,acad,hiab,agac,hibd",
    # collapse
    "ab,ab,c->", "ab,ab,c->c", "ab,ab,cd,cd->", "ab,ab,cd,cd->ac", "ab,ab,cd,cd->cd",
    "ab,ab,cd,cd,ef,ef->",
    # outer products
    "ab,cd,ef->abcdef", "ab,cd,ef->acdf", "ab,cd,de->abcde", "ab,cd,de->be",
    "ab,bcd,cd->abcd", "ab,bcd,cd->abd",
    # cases that have previously failed
    "eb,cb,fb->cef", "dd,fb,be,cdb->cef", "bca,cdb,dbf,afc->", "dcc,fce,ea,dbf->ab",
    "fdf,cdd,ccd,afe->ae", "abcd,ad", "ed,fcd,ff,bcf->be", "baa,dcf,af,cde->be",
    "bd,db,eac->ace", "fff,fae,bef,def->abd", "efc,dbc,acf,fd->abe",
    # inner products
    "ab,ab", "ab,ba", "abc,abc", "abc,bac", "abc,cba",
    # GEMM
    "ab,bc", "ab,cb", "ba,bc", "ba,cb", "abcd,cd", "abcd,ab", "abcd,cdef", "abcd,cdef->feba",
    "abcd,efdc",
    # inner than dot
    "aab,bc->ac", "ab,bcc->ac", "aab,bcc->ac", "baa,bcc->ac", "aab,ccb->ac",
    # random cases
    "aab,fa,df,ecc->bde", "ecb,fef,bad,ed->ac", "bcf,bbb,fbf,fc->", "bb,ff,be->e",
    "bcb,bb,fc,fff->", "fbb,dfd,fc,fc->", "afd,ba,cc,dc->bf", "adb,bc,fa,cfc->d",
    "bbd,bda,fc,db->acf", "dba,ead,cad->bce", "aef,fbc,dca->bde",
]

# (subscripts, operand shapes)
NUMPY = [
    # views
    ("...", [(2, 3)]), ("ij", [(2, 3)]), ("ji", [(2, 3)]), ("ii->i", [(3, 3)]),
    ("...ii->...i", [(2, 3, 3)]), ("ii...->...i", [(3, 3, 2)]), ("...ii->i...", [(2, 3, 3)]),
    ("jii->ij", [(2, 3, 3)]), ("ii...->i...", [(3, 3, 2)]), ("i...i->i...", [(3, 2, 3)]),
    ("i...i->...i", [(3, 2, 3)]), ("iii->i", [(3, 3, 3)]), ("ijk->jik", [(2, 3, 4)]),
    # sums
    ("i->", [(5,)]), ("...i->...", [(2, 3, 4)]), ("i...->...", [(2, 3, 4)]), ("ii", [(4, 4)]),
    ("..., ...", [(3, 4), (2, 3, 4)]), ("...i, ...i", [(2, 3, 4), (4,)]),
    ("i..., i...", [(4, 3, 2), (4,)]), ("i,j", [(3,), (4,)]), ("ij, j", [(4, 3), (3,)]),
    ("ji,j", [(3, 4), (3,)]), ("ij,jk", [(4, 3), (3, 5)]), ("ij,jk,kl", [(3, 4), (4, 5), (5, 2)]),
    ("ijk, jil -> kl", [(3, 4, 5), (4, 3, 2)]), (",i->", [(), (4,)]), ("i,->", [(4,), ()]),
    (",i->i", [(), (4,)]), ("i,->i", [(4,), ()]), ("i,i,i->i", [(3,), (3,), (3,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 2)]), ("x,yx,zx->xzy", [(3,), (2, 3), (4, 3)]),
    ("ijklm,ijn,ijn->", [(2, 2, 2, 2, 2), (2, 2, 3), (2, 2, 3)]),
    ("ijklm,ijn->", [(2, 2, 2, 2, 2), (2, 2, 3)]),
    # broadcasting
    ("ij...,j...->ij...", [(2, 3, 4), (3,)]), ("ij...,...j->ij...", [(2, 3, 4), (3,)]),
    ("ij...,j->ij...", [(2, 3, 4), (3,)]), ("ik...,k...->i...", [(4, 3), (3, 2)]),
    ("ik...,...kj->i...j", [(4, 3), (3, 2)]), ("...k,kj", [(4, 3), (3, 2)]),
    ("ik,k...->i...", [(4, 3), (3, 2)]), ("ijkl,k", [(2, 3, 4, 2), (4,)]),
    ("...kl,k", [(2, 3, 4, 2), (4,)]), ("...kl,k...", [(2, 3, 4, 2), (4,)]),
    ("...lmn,lmno->...o", [(1, 1, 1, 3, 2, 2), (3, 2, 2, 3)]),
    ("i,i,i->", [(5,), (5,), (5,)]), ("i,i,i,i->", [(5,), (5,), (5,), (5,)]),
    ("...ft,mf->...mt", [(2, 3, 5), (4, 3)]),
    # singleton broadcasting and broadcasting not mistaken for GEMM
    ("ijp,ipq,ikq->ijk", [(3, 1, 1), (3, 1, 3), (1, 3, 3)]), ("ij,ij->j", [(10, 2), (1, 2)]),
    ("ijk,kl,jl", [(1, 5, 4), (4, 6), (5, 6)]), ("ijk,kl,jl,i->i", [(1, 5, 4), (4, 6), (5, 6), (10,)]),
    ("abjk,kl,jl", [(1, 1, 5, 4), (4, 6), (5, 6)]),
    ("abjk,kl,jl,ab->ab", [(1, 1, 5, 4), (4, 6), (5, 6), (7, 7)]),
    ("obk,ijk->ioj", [(2, 4, 3), (2, 4, 3)]),
    # edge cases
    ("aabb->ab", [(2, 2, 3, 3)]), ("bbcdc->d", [(1, 1, 3, 1, 3)]), ("ijij->", [(2, 3, 2, 3)]),
    ("im,im,im->m", [(3, 2), (3, 2), (3, 2)]), ("mi,mi,mi->m", [(2, 3), (2, 3), (2, 3)]),
]

# NumPy's dtype tests (test_einsum_sums_*), on a selection of the forms above
DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16", "float32",
          "float64", "complex64", "complex128"]
DTYPE_FORMS = ["i->", "...i->...", "ii", "...,...", "...i,...i", "i,j", "ij,j", "ij,jk",
               "ij,jk,kl", "ijk,jil->kl", ",i->", "i,i,i->i", "...ij,...jk->...ik",
               "x,yx,zx->xzy"]
