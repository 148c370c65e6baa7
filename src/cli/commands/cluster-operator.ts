/**
 * `openfief operator` wired to the cluster's reconciler. Its own module so that loading it names
 * only `clusterReconcilerFactory` from the application layer: a dynamic import of the layer's door
 * would make every use case part of every command's start-up (ADR 0113).
 */
import { checkOperatorWitnesses, clusterReconcilerFactory } from "../../compose/index.js";
import { registerOperator } from "./operator.js";

export const register = registerOperator(clusterReconcilerFactory, { checkWitness: (text) => checkOperatorWitnesses([text]) });
