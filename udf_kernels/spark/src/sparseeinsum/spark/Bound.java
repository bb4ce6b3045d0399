package sparseeinsum.spark;

import java.io.Serializable;
import org.apache.spark.sql.types.DataType;

/** What every function of the catalog declares: its name, input types and result type
 *  (the subclasses add the interface, ScalarFunction or AggregateFunction, and the code).
 *  Serializable, as Spark ships the functions to its executors. */
public abstract class Bound implements Serializable {
    final String name;
    final DataType result;
    final DataType[] inputs;

    Bound(String name, DataType result, DataType... inputs) {
        this.name = name;
        this.result = result;
        this.inputs = inputs;
    }

    public String name() {
        return name;
    }

    public DataType[] inputTypes() {
        return inputs;
    }

    public DataType resultType() {
        return result;
    }
}
