// Package jsonerr says what encoding/json found wrong in a file in the
// words of the file's author: where (file:line:col, as compilers do) and
// what, with the field's path and the type it takes in JSON's terms, not
// Go's ("Go struct field TopologyGPU.gpus.numa of type int" becomes
// "gpus.numa: a string where a whole number belongs").
package jsonerr
