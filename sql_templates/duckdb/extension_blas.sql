SELECT se_extension_blas()
