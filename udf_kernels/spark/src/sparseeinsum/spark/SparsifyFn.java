package sparseeinsum.spark;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;

/** se_sparsify(v): a dense array packed sparse (the offsets of its stored values, then
 *  the values). */
public class SparsifyFn extends Bound implements ScalarFunction<ArrayData> {
    SparsifyFn() {
        super("se_sparsify", KernelFn.ARRAY, KernelFn.ARRAY);
    }

    public static ArrayData invoke(ArrayData v) {
        return v == null ? null : Arrays2.array(KernelSpec.pack(Arrays2.doubles(v, "se_sparsify", "the input")));
    }
}
